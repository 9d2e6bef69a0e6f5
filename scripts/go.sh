# Go for the tools built from Go modules (tools/): the machine's go, or Go's toolchain module from the Go module
# proxy, unpacked into the cache. Sourced after lib.sh, never run.
# shellcheck shell=bash

go_fallback_version=1.26.8
# SHA-256 of golang.org/toolchain@v0.0.1-go1.26.8.linux-amd64.zip as the Go module proxy serves it.
go_fallback_sha256=30c2b1bf7dcc88d3eb0a1364e47ddd9128edb3110a30e8a0ef61cd5856b31de7

# "1.26.0" → 1026000, for comparing versions.
version_number() {
  local major minor patch
  IFS=. read -r major minor patch <<<"$1"
  printf '%d\n' "$((${major:-0} * 1000000 + ${minor:-0} * 1000 + ${patch:-0}))"
}

# A go command at least as new as the go.mod given asks for, or at least 1.21 (which fetches the right toolchain
# itself, through the module proxy, as GOTOOLCHAIN=auto does); else Go's toolchain module, unpacked into the cache.
find_go() {
  local needed candidate version cache
  cache="$(shoal_cache_dir)"
  needed="$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$1")"
  for candidate in "$(command -v go 2>/dev/null || true)" /usr/local/go/bin/go "$cache/go-$go_fallback_version/bin/go"; do
    [ -n "$candidate" ] && [ -x "$candidate" ] || continue
    version="$(GOTOOLCHAIN=local "$candidate" env GOVERSION 2>/dev/null | sed 's/^go//')" || continue
    if [ "$(version_number "$version")" -ge "$(version_number "$needed")" ] ||
      [ "$(version_number "$version")" -ge "$(version_number 1.21)" ]; then
      printf '%s\n' "$candidate"
      return
    fi
  done
  fetch_go "$1"
  printf '%s\n' "$cache/go-$go_fallback_version/bin/go"
}

fetch_go() {
  local arch proxy zip work cache
  cache="$(shoal_cache_dir)"
  case "$(uname -m)" in
    x86_64) arch=amd64 ;;
    *) shoal_die "$1 needs Go $(sed -n 's/^go //p' "$1") or newer; install it (https://go.dev/dl/)" ;;
  esac
  proxy="${GOPROXY:-https://proxy.golang.org}"
  proxy="${proxy%%[,|]*}"
  case "$proxy" in direct | off | "") proxy=https://proxy.golang.org ;; esac
  shoal_say "no Go on this machine: fetching Go $go_fallback_version (golang.org/toolchain) from the Go module proxy into $cache/go-$go_fallback_version" >&2
  mkdir -p "$cache"
  work="$(mktemp -d "$cache/go.partial.XXXXXX")"
  zip="$work/toolchain.zip"
  curl -fsSL -o "$zip" "$proxy/golang.org/toolchain/@v/v0.0.1-go$go_fallback_version.linux-$arch.zip" ||
    { rm -rf "$work"; shoal_die "could not fetch Go's toolchain module from $proxy; install Go $go_fallback_version"; }
  [ "$(sha256sum "$zip" | cut -d' ' -f1)" = "$go_fallback_sha256" ] ||
    { rm -rf "$work"; shoal_die "Go's toolchain module from $proxy does not have the expected SHA-256"; }
  if command -v unzip >/dev/null 2>&1; then
    (cd "$work" && unzip -q toolchain.zip)
  else
    (cd "$work" && python3 -m zipfile -e toolchain.zip .)
  fi || { rm -rf "$work"; shoal_die "could not unpack Go's toolchain module (with unzip or python3)"; }
  # Module zips keep no file modes: make the commands executable, as the go command does for a toolchain it fetched.
  local root="$work/golang.org/toolchain@v0.0.1-go$go_fallback_version.linux-$arch"
  chmod +x "$root"/bin/* "$root"/pkg/tool/*/*
  rm -rf "$cache/go-$go_fallback_version"
  mv -T "$root" "$cache/go-$go_fallback_version"
  rm -rf "$work"
}


# Builds PACKAGE of the Go module in TOOL_DIR as NAME into CACHE_DIR/<hash of the module's files>/NAME, once per version
# of those files, and prints the binary's path. The partial file is this process's own, so runs sharing the machine
# never clobber each other's.
go_build_cached() {
  local tool="$1" package="$2" parent="$3" name="$4" hash dir go started
  hash="$(cat "$tool"/go.mod "$tool"/go.sum "$tool"/*.go | sha256sum | cut -c1-16)"
  dir="$parent/$hash"
  if [ ! -x "$dir/$name" ]; then
    go="$(find_go "$tool/go.mod")"
    shoal_say "building $name ($package) with $("$go" version | cut -d' ' -f3) from Go modules; the first build takes minutes" >&2
    mkdir -p "$dir"
    started=$SECONDS
    (cd "$tool" && CGO_ENABLED=0 GOFLAGS=-mod=readonly nice -n 10 "$go" build -trimpath -o "$dir/$name.partial.$$" "$package") ||
      { rm -f "$dir/$name.partial.$$"; shoal_die "could not build $name (${tool#"$SHOAL_ROOT"/})"; }
    mv -f "$dir/$name.partial.$$" "$dir/$name"
    shoal_say "built $name in $((SECONDS - started)) s" >&2
  fi
  printf '%s\n' "$dir/$name"
}
