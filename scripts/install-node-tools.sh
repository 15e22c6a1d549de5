#!/usr/bin/env bash
# Install the Node tools the tests use into .tools/ (git-ignored), idempotently, from the npm
# registry: node 24 (npm package `node`, which brings its own binary) and the packages of
# PACKAGES below, run with that node. Nothing is installed globally.
#
#   bash scripts/install-node-tools.sh          # install what is missing
#   bash scripts/install-node-tools.sh --check  # exit 0 if everything is present, 1 otherwise
#   bash scripts/install-node-tools.sh qmd      # only the packages whose name contains "qmd"
#
# Without npm it says so and exits 0 (tests that need these tools then skip with that reason).
# To add a tool, append "name@version-range" to PACKAGES.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD/.tools"
NODE_VERSION="${MEMORY_NODE_VERSION:-24}"
PACKAGES=(
  "@modelcontextprotocol/inspector@^0"
  "@tobilu/qmd@2.8.3"
)
if [[ $# -gt 0 && "$1" != --check ]]; then  # a filter: keep the packages naming any argument
  keep=()
  for p in "${PACKAGES[@]}"; do
    for want in "$@"; do [[ "$p" == *"$want"* ]] && { keep+=("$p"); break; }; done
  done
  PACKAGES=("${keep[@]}")
fi
NODE_BIN="$ROOT/node_modules/node/bin/node"
log() { printf 'install-node-tools: %s\n' "$*"; }

have_pkg() {  # installed and resolvable from .tools/node_modules
  local name="${1%@*}"; [[ "$1" == @* && "$name" == "" ]] && name="$1"
  [[ -f "$ROOT/node_modules/$name/package.json" ]]
}

missing=0
[[ -x "$NODE_BIN" ]] || missing=1
for p in "${PACKAGES[@]}"; do have_pkg "$p" || missing=1; done
if [[ "${1:-}" == "--check" ]]; then exit "$missing"; fi
if [[ "$missing" == 0 ]]; then
  log "up to date in .tools/ (node $("$NODE_BIN" -v))"; exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  log "npm is not installed: skipping node $NODE_VERSION and ${PACKAGES[*]}"
  log "(install Node.js/npm, e.g. 'apt-get install npm', then run this again)"
  exit 0
fi

mkdir -p "$ROOT"
[[ -f "$ROOT/package.json" ]] || echo '{"name":"memory-workbench-tools","private":true}' > "$ROOT/package.json"
if [[ ! -x "$NODE_BIN" ]]; then
  log "installing node@$NODE_VERSION (npm package 'node')"
  npm install --prefix "$ROOT" --no-audit --no-fund --loglevel=error "node@$NODE_VERSION"
fi
mkdir -p "$ROOT/bin"
ln -sfn "$NODE_BIN" "$ROOT/bin/node"
# npm lifecycle scripts and the tools' shebangs (#!/usr/bin/env node) run under node 24
export PATH="$ROOT/bin:$PATH"
todo=()
for p in "${PACKAGES[@]}"; do have_pkg "$p" || todo+=("$p"); done
if (( ${#todo[@]} )); then
  log "installing ${todo[*]}"
  npm install --prefix "$ROOT" --no-audit --no-fund --loglevel=error "${todo[@]}"
fi
log "ready: node $("$NODE_BIN" -v); tools in .tools/node_modules/.bin"
