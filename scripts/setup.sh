#!/usr/bin/env bash
# Prepares a checkout, on a fresh machine too, and does nothing that is already done:
#   1. a Node.js >= 22.22 (installed from the npm registry into the cache when the machine's is older),
#   2. the npm dependencies (npm ci on a fresh checkout; again whenever package-lock.json changes),
#   3. Apache Kafka's jars from Maven Central (skipped with KAFKA_HOME, or when KAFKA_BOOTSTRAP_SERVERS names a
#      Kafka to use instead of the embedded one), and a check that Java >= 17 is there to run them.
# Then `source scripts/env.sh` puts that Node.js first on PATH. See docs/kafka.md. Only what running Shoal needs:
# what the tests need besides (a browser, nftables, the Python SDK) is scripts/setup-test.sh's.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$SHOAL_ROOT/scripts/env.sh"
cd "$SHOAL_ROOT"

# 1. Node.js
if ! shoal_node_ok; then
  package="$(shoal_node_package)"
  command -v npm >/dev/null 2>&1 ||
    shoal_die "Node.js >= 22.22 is needed and there is no npm to install it with; install Node.js 24 from https://nodejs.org"
  shoal_say "Node.js on PATH is $(node --version 2>/dev/null || echo missing); installing $package@24 from the npm registry into $(shoal_cache_dir)/node"
  npm install --prefix "$(shoal_cache_dir)/node" --no-save --no-audit --no-fund --loglevel=error "$package@24" ||
    shoal_die "could not install $package@24 from the npm registry"
  source "$SHOAL_ROOT/scripts/env.sh"
  shoal_node_ok || shoal_die "installed $package@24, but $(shoal_node_bin)/node does not run"
fi

# 2. npm dependencies. The stamp records what node_modules was installed from, so unchanged trees are skipped.
stamp_file="node_modules/.shoal-setup"
if [ -f package-lock.json ]; then
  stamp="$(node --version) $(sha256sum package-lock.json | cut -d' ' -f1)"
else
  stamp="$(node --version) $(sha256sum package.json | cut -d' ' -f1)"
fi
if [ "$(cat "$stamp_file" 2>/dev/null)" != "$stamp" ]; then
  if [ ! -f package-lock.json ]; then
    shoal_say "npm install (no package-lock.json)"
    npm install --no-audit --no-fund
  elif [ ! -d node_modules ] || [ -n "${CI:-}" ]; then
    shoal_say "npm ci"
    npm ci --no-audit --no-fund
  else
    # A working tree others may be using right now: bring node_modules in line without deleting it first.
    shoal_say "npm install (node_modules is out of date with package-lock.json)"
    npm install --no-audit --no-fund
  fi
  printf '%s\n' "$stamp" >"$stamp_file"
fi

# 3. Kafka
if [ -n "${KAFKA_BOOTSTRAP_SERVERS:-}" ]; then
  exit 0
fi
bash "$SHOAL_ROOT/scripts/resolve-kafka.sh"
java_bin="${JAVA_HOME:+$JAVA_HOME/bin/}java"
java_version="$("$java_bin" -version 2>&1 | sed -n 's/.*version "\([^"]*\)".*/\1/p' | head -n 1)" ||
  true
[ -n "$java_version" ] ||
  shoal_die "Kafka $(shoal_kafka_version) needs Java 17 or newer, and there is no java on ${JAVA_HOME:+JAVA_HOME=}${JAVA_HOME:-PATH}"
java_major="${java_version%%.*}"
[ "$java_major" = 1 ] && java_major="$(printf '%s' "$java_version" | cut -d. -f2)"
[ "$java_major" -ge 17 ] 2>/dev/null ||
  shoal_die "Kafka $(shoal_kafka_version) needs Java 17 or newer, but $java_bin is Java $java_version"
