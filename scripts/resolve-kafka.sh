#!/usr/bin/env bash
# Resolves Apache Kafka's jars (org.apache.kafka:kafka_2.13 and kafka-tools, with all their runtime dependencies)
# from Maven Central into the cache: $SHOAL_CACHE_DIR/kafka-<version>/libs. Does nothing when they are already
# there or when KAFKA_HOME is set (then $KAFKA_HOME/libs is used as it is). See docs/kafka.md.
#
#   scripts/resolve-kafka.sh [VERSION]     (default: the version in src/kafka/embedded/version.ts)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

version="${1:-$(shoal_kafka_version)}"
[ -n "$version" ] || shoal_die "could not read the Kafka version from src/kafka/embedded/version.ts"

if [ -n "${KAFKA_HOME:-}" ]; then
  [ -d "$KAFKA_HOME/libs" ] || shoal_die "KAFKA_HOME is set to $KAFKA_HOME, but $KAFKA_HOME/libs does not exist"
  exit 0
fi

home="$(shoal_cache_dir)/kafka-$version"
libs="$home/libs"
# The marker is written last, so an interrupted resolution is redone rather than trusted.
[ -f "$libs/.complete" ] && exit 0

fail() {
  shoal_die "could not resolve Kafka $version jars from Maven Central: $1 (full log: $log)"
}

command -v mvn >/dev/null 2>&1 || {
  shoal_die "could not resolve Kafka $version jars from Maven Central: mvn (Apache Maven) is not on PATH; install it, or set KAFKA_HOME to an unpacked Kafka $version"
}

mkdir -p "$home"
log="$home/resolve.log"
# Resolve into a private folder and rename it into place, so concurrent set-ups never see half a folder.
work="$(mktemp -d "$home/libs.partial.XXXXXX")"
trap 'rm -rf "$work"' EXIT
: >"$log"

# Runs Maven, keeps its whole output in the log and shows each jar downloaded as it arrives.
run_mvn() {
  mvn -B -f "$SHOAL_ROOT/kafka/pom.xml" -Dkafka.version="$version" "$@" 2>&1 |
    tee -a "$log" |
    sed -n -u 's|^\[INFO\] Downloaded from [^:]*: .*/\([^/]*\.jar\) (\(.*\))$|  downloaded \1 (\2)|p'
}

# The first [ERROR] line Maven printed: why it failed, without the advice that follows.
first_error() {
  sed -n 's/^\[ERROR\] *//p' "$log" | sed 's/ -> \[Help [0-9]*\]$//' | grep -v '^ *$' | head -n 1
}

shoal_say "resolving Kafka $version jars from Maven Central into $libs"
run_mvn org.apache.maven.plugins:maven-dependency-plugin:copy-dependencies \
  -DincludeScope=runtime -DoutputDirectory="$work" || fail "$(first_error)"

# Kafka logs through SLF4J to log4j2, but its published poms leave the binding to the distribution; add the one
# that matches the SLF4J API and log4j2 versions Kafka brought, or the broker logs nothing at all.
log4j_version="$(find "$work" -maxdepth 1 -name 'log4j-core-*.jar' -printf '%f\n' | sed -n 's/^log4j-core-\(.*\)\.jar$/\1/p' | head -n 1)"
slf4j_version="$(find "$work" -maxdepth 1 -name 'slf4j-api-*.jar' -printf '%f\n' | sed -n 's/^slf4j-api-\(.*\)\.jar$/\1/p' | head -n 1)"
[ -n "$log4j_version" ] || fail "Kafka $version brought no log4j-core jar"
case "$slf4j_version" in
  1.*) binding=log4j-slf4j-impl ;;
  *) binding=log4j-slf4j2-impl ;;
esac
shoal_say "adding the SLF4J binding org.apache.logging.log4j:$binding:$log4j_version"
run_mvn org.apache.maven.plugins:maven-dependency-plugin:copy -Dartifact="org.apache.logging.log4j:$binding:$log4j_version" \
  -DoutputDirectory="$work" || fail "$(first_error)"

[ -f "$work/kafka_2.13-$version.jar" ] || fail "kafka_2.13-$version.jar is missing after resolution"
touch "$work/.complete"
# A folder without the marker is a leftover of an older, interrupted layout; replace it.
if [ -d "$libs" ] && [ ! -f "$libs/.complete" ]; then rm -rf "$libs"; fi
if mv -T "$work" "$libs" 2>/dev/null; then
  trap - EXIT
  shoal_say "Kafka $version: $(find "$libs" -name '*.jar' | wc -l) jars in $libs"
else
  # Another set-up finished first; its folder is as good as ours.
  [ -f "$libs/.complete" ] || fail "could not move the jars into $libs"
fi
