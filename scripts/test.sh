#!/usr/bin/env bash
# `npm test`: the whole suite (or the files given) with Node.js's test runner, against one embedded Kafka broker
# started once for the run by test/setup/kafka.ts, or against the Kafka that KAFKA_BOOTSTRAP_SERVERS names.
#
#   npm test                                   every test/**/*.test.ts
#   npm test -- test/kafka/embedded.test.ts    some files
#   npm test -- test/conformance/              every test file under a folder
#   SHOAL_TEST_CONCURRENCY=1 npm test          one test file at a time (default 2)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$SHOAL_ROOT"
bash scripts/setup-test.sh
source scripts/env.sh

# The Kubernetes manifest checker and Strimzi's CRDs (test/deploy/kubernetes-manifests.test.ts), made once before the
# tests start, so a first build (a few minutes) does not compete with them for the CPU. If it fails, that test says why.
if [ "$#" -eq 0 ] || [[ " $* " == *" test/deploy"* ]]; then
  bash scripts/k8s-check.sh --prepare || shoal_say "the manifest checker is not ready; test/deploy/kubernetes-manifests.test.ts will fail"
fi
if [ "$#" -eq 0 ] || [[ " $* " == *" test/kubernetes"* ]]; then
  bash scripts/kube-apiserver.sh --prepare || shoal_say "kube-apiserver and etcd are not built; test/kubernetes/ will fail"
fi

# The image test/image/image.test.ts runs (buildah, on a debootstrap base): the base once per machine (about a
# minute), the image again when the sources changed (seconds with the layers cached). If it fails, that test says so.
if [ "$#" -eq 0 ] || [[ " $* " == *" test/image"* ]]; then
  bash scripts/image.sh --prepare || shoal_say "the image is not built; test/image/image.test.ts will fail"
fi

if [ "$#" -eq 0 ]; then
  set -- 'test/**/*.test.ts'
fi
# A folder stands for the test files under it (node --test takes files and globs, not folders).
args=()
for arg in "$@"; do
  if [ -d "$arg" ]; then args+=("${arg%/}/**/*.test.ts"); else args+=("$arg"); fi
done
set -- "${args[@]}"

# Two files at a time suit a 2-core machine: most tests wait on Kafka, not the CPU. The timeout stops one hung
# test from hanging the run (and CI) without bound. --import runs test/setup/fast-check.ts in every test process (the
# global set-up runs in another one): it makes a property test's explicit maxLength fast-check's real bound.
exec node --test \
  --import ./test/setup/fast-check.ts \
  --test-reporter=spec \
  --test-concurrency="${SHOAL_TEST_CONCURRENCY:-2}" \
  --test-timeout="${SHOAL_TEST_TIMEOUT_MS:-120000}" \
  --test-global-setup=test/setup/kafka.ts \
  "$@"
