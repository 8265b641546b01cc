#!/usr/bin/env bash
# Idempotently install the release tools outside the repository, in their own virtual
# environment: ziglang (a C cross compiler from the package index, for the native reader of
# every platform) and build (the sdist). Under $TORCHSCOPE_RELEASE_TOOLS (default
# ~/.cache/torchscope-release). Prints the tools' python on its last line.
set -euo pipefail
TOOLS="${TORCHSCOPE_RELEASE_TOOLS:-$HOME/.cache/torchscope-release}"
PY="$TOOLS/venv/bin/python"
if ! "$PY" -c 'import ziglang, build' >/dev/null 2>&1; then
  echo "[ensure-tools] installing ziglang and build into $TOOLS/venv" >&2
  mkdir -p "$TOOLS"
  python3 -m venv "$TOOLS/venv"
  "$PY" -m pip install --quiet --disable-pip-version-check ziglang build
fi
echo "$PY"
