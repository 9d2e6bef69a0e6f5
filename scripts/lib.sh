# Helpers shared by the scripts in this folder; sourced, never run.
# shellcheck shell=bash

SHOAL_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Where Shoal keeps what it downloads (Node.js, Kafka's jars): never inside the work tree.
shoal_cache_dir() {
  printf '%s\n' "${SHOAL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/shoal}"
}

# The Kafka version, pinned once in src/kafka/embedded/version.ts.
shoal_kafka_version() {
  sed -n "s/^export const KAFKA_VERSION = '\([^']*\)'.*/\1/p" "$SHOAL_ROOT/src/kafka/embedded/version.ts"
}

# The folder holding Kafka's jars: $KAFKA_HOME/libs when KAFKA_HOME is set, else the cache.
shoal_kafka_libs() {
  if [ -n "${KAFKA_HOME:-}" ]; then
    printf '%s\n' "$KAFKA_HOME/libs"
  else
    printf '%s\n' "$(shoal_cache_dir)/kafka-$(shoal_kafka_version)/libs"
  fi
}

shoal_say() {
  printf 'shoal: %s\n' "$*"
}

shoal_die() {
  printf 'shoal: %s\n' "$*" >&2
  exit 1
}
