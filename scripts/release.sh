#!/usr/bin/env bash
# Cut a release: bump the one version (pyproject.toml, package.json + package-lock.json,
# server/torchscope/_version.py), turn CHANGELOG.md's "Unreleased" heading into the version's,
# build every artefact into dist/VERSION/, check each one's tags against its bytes
# (tests/release/test_artefacts.py), commit the bump and tag vVERSION.
#
#   bash scripts/release.sh VERSION              # bump, build, check, commit, tag
#   bash scripts/release.sh VERSION --no-build   # bump, commit, tag (tests/release uses it)
#   bash scripts/release.sh --build-only         # build and check the current version; no git
#
# Artefacts: the native reader cross-built with ziglang for linux-x64, linux-arm64,
# darwin-arm64 and darwin-x64 (abi3 for CPython 3.11+, and 3.9, 3.10); wheels (manylinux2014
# x86_64 and aarch64, macOS arm64 and x86_64: cp311-abi3, cp39, cp310; py3-none-any) and the sdist; one VSIX
# per VS Code target and a universal one. Needs a clean work tree (but for --build-only), npm's
# dev dependencies and the release tools (scripts/release/ensure-tools.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf '\033[1m[release]\033[0m %s\n' "$*" >&2; }
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
fi

VERSION="" BUILD=1 BUMP=1
for arg in "$@"; do
  case "$arg" in
    --no-build) BUILD=0 ;;
    --build-only) BUMP=0 ;;
    -*) echo "release: unknown option $arg" >&2; exit 2 ;;
    *) VERSION="$arg" ;;
  esac
done
if [ "$BUMP" = 1 ]; then
  [[ "$VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+([a-z]+[0-9]+)?$ ]] \
    || { echo "release: give a version like 0.2.0 (got '${VERSION}')" >&2; exit 2; }
  git diff --quiet HEAD -- || { echo "release: the work tree has changes; commit them first" >&2; exit 2; }
  if git rev-parse -q --verify "refs/tags/v$VERSION" >/dev/null; then
    echo "release: tag v$VERSION exists" >&2; exit 2
  fi
  say "version $VERSION"
  "$PY" scripts/release/bump.py "$VERSION" "$(date -u +%Y-%m-%d)"
else
  VERSION="$("$PY" -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')"
fi

if [ "$BUILD" = 1 ]; then
  DIST="dist/$VERSION"
  rm -rf "$DIST" && mkdir -p "$DIST"
  ZIG_PYTHON="$(bash scripts/release/ensure-tools.sh)"
  export ZIG_PYTHON
  rm -rf build/release/native
  for target in linux-x64 linux-arm64 darwin-arm64 darwin-x64; do
    say "native reader: $target"
    "$PY" scripts/release/cross_native.py "$target" "build/release/native/$target" "$ZIG_PYTHON"
  done
  say "wheels and sdist"
  "$PY" scripts/release/wheels.py "$DIST" build/release/native "$ZIG_PYTHON"
  say "VSIX per target"
  TORCHSCOPE_NATIVE_ROOT=build/release/native bash scripts/release/package-vsix.sh "$DIST"
  say "checking every artefact's tags against its bytes"
  TORCHSCOPE_RELEASE_DIR="$DIST" PYTHONPATH="$PWD/server" "$PY" -m pytest -q -p no:cacheprovider \
    tests/release/test_artefacts.py
  say "artefacts (dist/$VERSION):"
  printf '| artefact | size |\n|---|---|\n'
  (cd "$DIST" && for f in *; do printf '| %s | %s |\n' "$f" "$(du -h "$f" | cut -f1)"; done)
fi

if [ "$BUMP" = 1 ]; then
  git add pyproject.toml package.json package-lock.json server/torchscope/_version.py CHANGELOG.md
  git commit -q -m "Release $VERSION"
  git tag -a "v$VERSION" -m "torchscope $VERSION"
  say "tagged v$VERSION (push it with: git push origin v$VERSION)"
fi
