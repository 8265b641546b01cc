#!/usr/bin/env bash
# Bundle the language server into the extension before `vsce package`:
#   extension/bundled/tool/torchscope  <- server/torchscope (no __pycache__, no C sources; symlinks
#                                         such as report/findings.md copied as files), with
#                                         ingest/_native built for every CPython found here
#                                         (scripts/vscode/build_native.py: one build per version)
#   extension/bundled/libs             <- pip install --no-deps --target (pinned pure-Python deps)
# The launcher (extension/launcher/launch.py) puts both first on sys.path, so the user's
# interpreter only needs torch. PYTHON picks the pip to use (default: .venv/bin/python, else python3).
# TORCHSCOPE_BUNDLE_TARGET (a VS Code target: linux-x64, linux-arm64, darwin-arm64, darwin-x64)
# cross-builds the reader for that platform instead (scripts/release/cross_native.py, ziglang);
# "universal" bundles none (pure Python). With TORCHSCOPE_NATIVE_ROOT the target's builds are
# copied from there (release.sh: the same bytes as the wheels'). For a target other than this machine's, msgpack's C
# extension is dropped: msgpack then runs its own pure-Python fallback.
set -euo pipefail
cd "$(dirname "$0")/../.."

PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
fi
OUT=extension/bundled
REQ=extension/requirements-bundle.txt

[ -f server/torchscope/__init__.py ] || { echo "bundle-python: server/torchscope/__init__.py missing" >&2; exit 1; }

rm -rf "$OUT"
mkdir -p "$OUT/tool" "$OUT/libs"
echo "bundle-python: copying server/torchscope -> $OUT/tool/torchscope" >&2
tar -C server --dereference --exclude='__pycache__' --exclude='*.pyc' --exclude='*.c' --exclude='*.h' \
  --exclude='_native*.so' -cf - torchscope | tar -C "$OUT/tool" -xf -
TARGET="${TORCHSCOPE_BUNDLE_TARGET:-}"
HOST="$(uname -s | tr '[:upper:]' '[:lower:]')-$(uname -m | sed 's/x86_64/x64/;s/aarch64/arm64/')"
if [ -z "$TARGET" ]; then
  "$PY" scripts/vscode/build_native.py "$OUT/tool/torchscope/ingest"
elif [ -n "${TORCHSCOPE_NATIVE_ROOT:-}" ] && [ -d "$TORCHSCOPE_NATIVE_ROOT/$TARGET" ]; then
  cp "$TORCHSCOPE_NATIVE_ROOT/$TARGET"/_native*.so "$OUT/tool/torchscope/ingest/"  # the wheels' builds
elif [ "$TARGET" != universal ]; then
  "$PY" scripts/release/cross_native.py "$TARGET" "$OUT/tool/torchscope/ingest" ${ZIG_PYTHON:-}
fi
echo "bundle-python: $PY -m pip install --no-deps --target $OUT/libs -r $REQ" >&2
"$PY" -m pip install --quiet --disable-pip-version-check --no-deps --no-compile --only-binary=:all: \
  --target "$OUT/libs" -r "$REQ" 2>&1 | { grep -v "^WARNING: Location .* is ignored" || true; } >&2
[ "${PIPESTATUS[0]}" -eq 0 ] || { echo "bundle-python: pip install failed" >&2; exit 1; }
rm -rf "$OUT/libs/bin"
if [ -n "$TARGET" ] && [ "$TARGET" != "$HOST" ]; then
  find "$OUT/libs" -name '*.so' -delete  # msgpack's C build is this machine's: its fallback runs
fi
find "$OUT" -name '__pycache__' -type d -prune -exec rm -rf {} +
echo "bundle-python: done ($(du -sh "$OUT" | cut -f1))" >&2
