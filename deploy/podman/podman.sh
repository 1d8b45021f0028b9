#!/usr/bin/env bash
# Build the memsidecar image with podman from a local Debian base (no registry needed).
#
#   deploy/podman/podman.sh base    # localhost/memsidecar-base:<key>, cached (prints its name)
#   deploy/podman/podman.sh image   # localhost/memsidecar:<version> from dist/ (make dist)
#
# The base is `debootstrap --variant=minbase bookworm` from this machine's own Debian mirror
# (/etc/apt/sources.list*), imported with `podman import`; its rootfs tarball is kept in
# build/deploy/ and the image tag carries the mirror and the ISO week, so a warm machine
# reuses it and a new week refreshes it. Installs podman, runc and debootstrap when missing.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
CACHE="$ROOT/build/deploy"
export CONTAINERS_CONF="$ROOT/deploy/podman/containers.conf"
. "$ROOT/clients/apt.sh"

mirror() {
  local url
  url="$(grep -rhv '^[[:space:]]*#' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null \
    | grep -oE 'https?://[^ ]+/debian/?( |$)' | head -n1 | tr -d ' ' || true)"
  echo "${url:-http://deb.debian.org/debian}"
}

base() {
  apt_ensure podman podman runc debootstrap
  local url key tag tarball
  url="$(mirror)"
  key="$(printf '%s %s' "$url" "$(date -u +%G-%V)" | sha256sum | cut -c1-12)"
  tag="localhost/memsidecar-base:bookworm-$key"
  tarball="$CACHE/bookworm-$key.tar"
  if ! podman image exists "$tag"; then
    if [ ! -s "$tarball" ]; then
      echo "podman.sh: debootstrap bookworm from $url (a few minutes, once a week)" >&2
      local dir="$CACHE/rootfs-$key"
      rm -rf "$dir" && mkdir -p "$dir"
      debootstrap --variant=minbase bookworm "$dir" "$url" >&2
      tar -C "$dir" -cf "$tarball.partial" . && mv "$tarball.partial" "$tarball"
      rm -rf "$dir"
    fi
    podman import "$tarball" "$tag" >&2
  fi
  echo "$tag"
}

image() {
  local base version tag
  base="$(base)"
  version="$(grep -m1 '^version' "$ROOT/pyproject.toml" | cut -d'"' -f2)"
  tag="localhost/memsidecar:$version"
  ls "$ROOT"/dist/memsidecar-"$version"-*.whl "$ROOT"/dist/memsidecar_client-*.whl \
    "$ROOT/dist/requirements.txt" >/dev/null  # make dist
  podman build --network=host --build-arg BASE="$base" \
    --build-arg PIP_CERT=/run/host-ca.crt \
    -v /etc/ssl/certs/ca-certificates.crt:/run/host-ca.crt:ro \
    -f "$ROOT/Containerfile" -t "$tag" "$ROOT" >&2
  echo "$tag"
}

"${1:?usage: podman.sh base|image}"
