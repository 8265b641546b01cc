#!/usr/bin/env bash
# Set up everything on a fresh machine, then run the main job: profile the bundled example.
#   - a virtual environment at .venv/ (unless one is already active) with a pinned CPU torch
#     (when the interpreter has no usable torch), torchscope in editable mode and the dev tools;
#   - the VS Code extension's Node dependencies and build (when npm is available);
#   - Debian's neovim for the Neovim client's test (when missing, as root with apt-get);
#   - `torchscope profile examples/matmul_add.py::fn`, which prints each directive's verdict.
set -euo pipefail
cd "$(dirname "$0")/.."

TORCH_VERSION="${TORCHSCOPE_TORCH_VERSION:-2.13.0}"
say() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }

if [ -n "${VIRTUAL_ENV:-}" ]; then
  PY="$VIRTUAL_ENV/bin/python"
  say "using the active virtual environment $VIRTUAL_ENV"
else
  if [ ! -x .venv/bin/python ]; then
    say "creating .venv/"
    python3 -m venv .venv
  fi
  PY=.venv/bin/python
fi

if "$PY" -c 'import sys, torch; v = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]); sys.exit(v < (2, 1))' 2>/dev/null; then
  say "torch $("$PY" -c 'import torch; print(torch.__version__)') already installed"
else
  # Pinned: an unpinned torch would pull a multi-GB CUDA build where a CPU one is on disk.
  say "installing torch==$TORCH_VERSION"
  "$PY" -m pip install --quiet "torch==$TORCH_VERSION"
fi
say "installing torchscope and its dev tools"
"$PY" -m pip install --quiet -e ".[dev]"

if command -v npm >/dev/null 2>&1 && [ -f package.json ]; then
  say "installing the extension's Node dependencies and packaging build/torchscope.vsix"
  npm ci --no-audit --no-fund --loglevel=error
  npm run --silent package
else
  say "npm not found: skipping the VS Code extension build (the CLI and the server work without it)"
fi

# Neovim 0.7+ for tests/nvim (the editors/nvim client): Debian's package, when we may install it.
if ! command -v nvim >/dev/null 2>&1; then
  SUDO=""
  if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO="sudo -n"
  fi
  if { [ "$(id -u)" = 0 ] || [ -n "$SUDO" ]; } && command -v apt-get >/dev/null 2>&1; then
    say "installing Debian's neovim (for the Neovim client's test)"
    { $SUDO apt-get update -qq \
      && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq neovim >/dev/null; } \
      || say "could not install neovim: tests/nvim will be skipped"
  else
    say "nvim not found, and no apt-get as root: tests/nvim will be skipped (install neovim >= 0.7)"
  fi
fi

say "profiling examples/matmul_add.py::fn (each '# torchscope:' directive in turn)"
"$(dirname "$PY")/torchscope" profile examples/matmul_add.py::fn
