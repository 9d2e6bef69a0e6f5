#!/usr/bin/env bash
# What the tests need beyond running Shoal (scripts/setup.sh), installed only when missing, by `npm test`, the drills,
# the lab and the benchmarks that use them — never by `npm run up`:
#   - Debian's chromium, for the dashboard's browser test (SHOAL_SKIP_CHROMIUM=1 skips it),
#   - as root, Debian's nftables, for the network lab,
#   - the CloudEvents Python SDK from PyPI, for the sinks written as users write them (test/sinks/python_sink.py),
#     into the cache (`$(shoal_cache_dir)/python`, on PYTHONPATH for those sinks),
#   - confluent-kafka (librdkafka) from PyPI into the same folder, the independent producer of the conformance suite
#     (test/conformance/kafka_producer.py).
# None is fatal: the one test that needs what could not be installed says so.
# `--python` installs only the Python packages (what a benchmark with a Python sink needs: test/sinks/python-sink.ts).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bash "$SHOAL_ROOT/scripts/setup.sh"
python_only=""
[ "${1:-}" = "--python" ] && python_only=1

# Chromium, for test/ui/ui-browser.test.ts.
if [ -z "$python_only" ]; then
if [ -z "${SHOAL_SKIP_CHROMIUM:-}" ] && [ ! -x "${SHOAL_CHROMIUM:-/usr/bin/chromium}" ]; then
  if command -v apt-get >/dev/null 2>&1; then
    sudo_cmd=""
    [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo -n"
    shoal_say "installing Debian's chromium for the dashboard's browser test (apt-get install chromium)"
    { $sudo_cmd apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq chromium >/dev/null; } ||
      shoal_say "could not install chromium; test/ui/ui-browser.test.ts will fail until /usr/bin/chromium exists"
  else
    shoal_say "no /usr/bin/chromium and no apt-get: test/ui/ui-browser.test.ts needs a Chromium (set SHOAL_CHROMIUM to its path)"
  fi
fi

# nftables, for the network lab (npm run test:lab): only as root (the lab needs root; elsewhere it skips).
if ! command -v nft >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  shoal_say "installing Debian's nftables for the network lab (apt-get install nftables)"
  { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nftables >/dev/null 2>&1 ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nftables >/dev/null; }; } ||
    shoal_say "could not install nftables; npm run test:lab will say it cannot make the lab"
fi
fi

# Python packages from PyPI, pinned, into the cache (on PYTHONPATH for the tests that use them); a stamp per package
# says which version the folder holds.
python_dir="$(shoal_cache_dir)/python"

# pip_into_cache PACKAGE VERSION MODULE WHO_NEEDS_IT
pip_into_cache() {
  local package="$1" version="$2" module="$3" needed_by="$4" stamp="$python_dir/.shoal-$1"
  [ "$(cat "$stamp" 2>/dev/null)" = "$version" ] && return 0
  if ! { command -v python3 >/dev/null 2>&1 && python3 -m pip --version >/dev/null 2>&1; }; then
    shoal_say "no python3 with pip: $needed_by need Python 3 and pip"
    return 0
  fi
  shoal_say "installing $package $version from PyPI into $python_dir"
  if python3 -m pip install --quiet --disable-pip-version-check --no-warn-script-location --upgrade \
    --target "$python_dir" "$package==$version" 2>&1 | grep -v "Running pip as the 'root' user" >&2; then :; fi
  if PYTHONPATH="$python_dir" python3 -c "import $module" 2>/dev/null; then
    printf '%s\n' "$version" >"$stamp"
  else
    shoal_say "could not install $package; $needed_by will fail"
  fi
}

# The CloudEvents Python SDK: the sinks written as users write them (test/sinks/python_sink.py).
pip_into_cache cloudevents 1.12.0 cloudevents.http "the tests with a Python sink"
# confluent-kafka (librdkafka): the conformance suite's independent producer.
pip_into_cache confluent-kafka 2.16.1 confluent_kafka "the conformance suite's KafkaSource tests"
