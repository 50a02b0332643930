#!/usr/bin/env bash
# The base image of every container of the deployment, from Debian's packages and no registry: debootstrap
# makes a minimal bookworm root with what the processes need (Python and venv, bubblewrap for the sandbox,
# Node.js for the Node sample bot, Debian's Redis and Prometheus for the compose stack's own services),
# `docker import` makes it an image. Cached: nothing is done when the image exists (BASE_REBUILD=1 redoes it).
#
#   deploy/docker/base.sh [IMAGE]     # default pilotta-arena-base:bookworm
set -euo pipefail

image=${1:-${BASE_IMAGE:-pilotta-arena-base:bookworm}}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=${DEBIAN_SUITE:-bookworm}
packages=python3,python3-venv,bubblewrap,nodejs,redis-server,redis-tools,prometheus,ca-certificates

if [ -z "${BASE_REBUILD:-}" ] && docker image inspect "$image" >/dev/null 2>&1; then
  echo "base.sh: $image exists (BASE_REBUILD=1 to make it again)"
  exit 0
fi
command -v debootstrap >/dev/null 2>&1 || { echo "base.sh: debootstrap is not installed (deploy/docker/engine.sh installs it)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "base.sh: debootstrap needs root (uid $(id -u))" >&2; exit 1; }

root=$(mktemp -d /var/tmp/pilotta-base.XXXXXX)
trap 'rm -rf "$root"' EXIT
echo "base.sh: debootstrap $suite into $root ($packages)"
timeout 1800 debootstrap --variant=minbase --include="$packages" "$suite" "$root" "$mirror" >"$root.log" 2>&1 || {
  echo "base.sh: debootstrap failed; the end of $root.log:" >&2; tail -20 "$root.log" >&2; exit 1; }
rm -f "$root.log"
# Smaller and free of the build machine's traces: no package lists, no caches, no docs, no logs.
chroot "$root" apt-get clean
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/* "$root"/usr/share/doc/* "$root"/usr/share/man/* \
  "$root"/var/log/* "$root"/tmp/* "$root"/root/.cache
# The image's resolv.conf and hosts are Docker's (it mounts its own); the build machine's are not kept.
: >"$root/etc/resolv.conf"
tar -C "$root" --numeric-owner -c . | docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8' \
  --change 'CMD ["/bin/bash"]' - "$image" >/dev/null
echo "base.sh: imported $image ($(docker image inspect -f '{{.Size}}' "$image") bytes)"
