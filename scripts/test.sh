#!/usr/bin/env bash
# Run every check and test: ruff, mypy, the extension's tsc/eslint/unit tests, then pytest
# (unit, worker, LSP, VS Code end to end; CUDA tests skip without a GPU).
# Extra arguments go to pytest, e.g. `scripts/test.sh tests/unit -k verdict`.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -n "${VIRTUAL_ENV:-}" ]; then PY="$VIRTUAL_ENV/bin/python"; else PY=.venv/bin/python; fi
if [ ! -x "$PY" ]; then
  echo "no virtual environment: run scripts/setup.sh first" >&2
  exit 2
fi
say() { printf '\033[1m[test]\033[0m %s\n' "$*"; }

say "ruff"
"$PY" -m ruff check server tests bench examples scripts
say "mypy (strict)"
"$PY" -m mypy
if command -v npm >/dev/null 2>&1 && [ -f package.json ]; then
  say "extension: typecheck, lint, unit tests"
  npm run --silent typecheck
  npm run --silent lint
  npm run --silent test
fi
say "pytest"
"$PY" -m pytest "$@"
