#!/usr/bin/env bash
# kube-apiserver, etcd and kubectl for the tests against a real Kubernetes API (test/kubernetes/,
# docs/kubernetes.md), built from the Go module proxy into the cache, never into the work tree:
#   - kube-apiserver and kubectl from k8s.io/kubernetes (tools/kube-apiserver: a module that requires it and replaces
#     each of its ./staging modules with the k8s.io/<name> release of the same version, as the proxy serves them);
#   - etcd from go.etcd.io/etcd/server/v3 (tools/etcd).
# Each is built once per version of its module files: about 7 minutes cold on 2 cores (docs/kubernetes.md), seconds after.
#
#   scripts/kube-apiserver.sh --prepare    build what is missing
#   scripts/kube-apiserver.sh              build what is missing, then print where each is
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/go.sh"
cd "$SHOAL_ROOT"

cache="$(shoal_cache_dir)"

apiserver="$(go_build_cached tools/kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$cache/kubernetes/kube-apiserver" kube-apiserver)"
kubectl="$(go_build_cached tools/kube-apiserver k8s.io/kubernetes/cmd/kubectl "$cache/kubernetes/kubectl" kubectl)"
etcd="$(go_build_cached tools/etcd . "$cache/kubernetes/etcd" etcd)"
if [ "${1:-}" = "--prepare" ]; then
  exit 0
fi
printf 'SHOAL_KUBE_APISERVER=%s\nSHOAL_ETCD=%s\nSHOAL_KUBECTL=%s\n' "$apiserver" "$etcd" "$kubectl"
