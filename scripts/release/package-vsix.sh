#!/usr/bin/env bash
# Package the VS Code extension once per target into OUT_DIR (default build/vsix):
#   torchscope-<target>-<version>.vsix for linux-x64, linux-arm64, darwin-arm64, darwin-x64
#   (`vsce package --target`, each with its own cross-built reader), and
#   torchscope-<version>.vsix, the universal one (pure Python).
# Needs npm's dev dependencies (npm ci) and the release tools (ensure-tools.sh).
#   bash scripts/release/package-vsix.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT="${1:-build/vsix}"
mkdir -p "$OUT"
VERSION="$(node -p 'require("./package.json").version')"
export ZIG_PYTHON="${ZIG_PYTHON:-$(bash scripts/release/ensure-tools.sh)}"
node scripts/vscode/build.mjs --production
for target in linux-x64 linux-arm64 darwin-arm64 darwin-x64 universal; do
  TORCHSCOPE_BUNDLE_TARGET="$target" bash scripts/vscode/bundle-python.sh
  if [ "$target" = universal ]; then
    file="$OUT/torchscope-$VERSION.vsix"; flag=()
  else
    file="$OUT/torchscope-$target-$VERSION.vsix"; flag=(--target "$target")
  fi
  npx vsce package --no-dependencies "${flag[@]}" --readme-path extension/README.md --out "$file"
done
rm -rf extension/bundled  # the next `npm run package` bundles this machine's build again
