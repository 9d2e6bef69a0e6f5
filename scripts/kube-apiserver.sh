#!/usr/bin/env bash
# kube-apiserver, etcd and kubectl for the tests against a real Kubernetes API (test/kubernetes/,
# docs/kubernetes.md), built from the Go module proxy into the cache, never into the work tree:
#   - kube-apiserver and kubectl from k8s.io/kubernetes (tools/kube-apiserver: a module that requires it and replaces
#     each of its ./staging modules with the k8s.io/<name> release of the same version, as the proxy serves them);
#   - etcd from go.etcd.io/etcd/server/v3 (tools/etcd).
# Each is built once per version of its module files: about 10 minutes cold on 2 cores, seconds after.
#
#   scripts/kube-apiserver.sh --prepare    build what is missing
#   scripts/kube-apiserver.sh              build what is missing, then print where each is
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/go.sh"
cd "$SHOAL_ROOT"

cache="$(shoal_cache_dir)"

# Builds `package` of the module in tools/MODULE into the cache as NAME, once per version of the module's files.
build_tool() {
  local module="$1" name="$2" package="$3" tool hash dir go started
  tool="$SHOAL_ROOT/tools/$module"
  hash="$(cat "$tool"/go.mod "$tool"/go.sum "$tool"/*.go | sha256sum | cut -c1-16)"
  dir="$cache/kubernetes/$name-$hash"
  if [ ! -x "$dir/$name" ]; then
    go="$(find_go "$tool/go.mod")"
    shoal_say "building $name ($package) with $("$go" version | cut -d' ' -f3) from the Go module proxy; the first build takes minutes" >&2
    mkdir -p "$dir"
    started=$SECONDS
    # A partial file of this process's own, so runs sharing the machine never clobber each other's.
    (cd "$tool" && CGO_ENABLED=0 GOFLAGS=-mod=readonly nice -n 10 "$go" build -trimpath -o "$dir/$name.partial.$$" "$package") ||
      { rm -f "$dir/$name.partial.$$"; shoal_die "could not build $name (tools/$module)"; }
    mv -f "$dir/$name.partial.$$" "$dir/$name"
    shoal_say "built $name in $((SECONDS - started)) s" >&2
  fi
  printf '%s\n' "$dir/$name"
}

apiserver="$(build_tool kube-apiserver kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver)"
kubectl="$(build_tool kube-apiserver kubectl k8s.io/kubernetes/cmd/kubectl)"
etcd="$(build_tool etcd etcd .)"
if [ "${1:-}" = "--prepare" ]; then
  exit 0
fi
printf 'SHOAL_KUBE_APISERVER=%s\nSHOAL_ETCD=%s\nSHOAL_KUBECTL=%s\n' "$apiserver" "$etcd" "$kubectl"
