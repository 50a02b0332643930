#!/usr/bin/env bash
# `make image`: the project's image, pilotta-arena:local, built here from Debian's packages and PyPI's,
# with no image registry:
#   1. the base image (deploy/docker/base.sh: debootstrap + docker import; skipped when it exists);
#   2. the wheelhouse (deploy/docker/build/wheels: pip on this machine downloads the dependencies' wheels;
#      skipped while pyproject.toml is unchanged), and the Node sample bot's node_modules;
#   3. the worker's seccomp profile (deploy/docker/build/seccomp-worker.json: deploy/docker/seccomp.py, on
#      Docker's default profile from Debian's golang-github-docker-docker-dev, the engine's source package);
#   4. docker build (the Dockerfile): layers cached, so a rebuild with no change takes seconds.
set -euo pipefail
cd "$(dirname "$0")/../.."

image=${IMAGE:-pilotta-arena:local}
base=${BASE_IMAGE:-pilotta-arena-base:bookworm}
build=deploy/docker/build
python=${PYTHON:-.venv/bin/python}
[ -x "$python" ] || python=python3

deploy/docker/engine.sh
deploy/docker/base.sh "$base"

mkdir -p "$build/wheels" "$build/node_modules"
stamp=$(sha256sum pyproject.toml | cut -c1-16)
if [ "$(cat "$build/wheels/.pyproject" 2>/dev/null)" != "$stamp" ]; then
  echo "image.sh: the wheelhouse ($build/wheels) for pyproject.toml $stamp"
  rm -rf "$build/wheels" && mkdir -p "$build/wheels"
  # The project's dependencies, and what building the project takes (its build-system.requires), so that
  # the image's `pip install .` needs no index.
  "$python" - >"$build/wheels/requirements.txt" <<'PY'
import tomllib
project = tomllib.load(open("pyproject.toml", "rb"))
print("\n".join(project["project"]["dependencies"] + project["build-system"]["requires"]))
PY
  # For the image's interpreter (bookworm's CPython 3.11.2, glibc 2.36), not this machine's: the wheels'
  # tags are its own. pip evaluates the markers for the interpreter it runs on, so what a marker adds on
  # 3.11.2 and not here is named too (redis needs async-timeout below 3.11.3). Binary wheels only.
  "$python" -m pip download --quiet --dest "$build/wheels" --only-binary=:all: \
    --python-version 3.11.2 --implementation cp --abi cp311 --abi abi3 --abi none \
    --platform manylinux_2_36_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform any -r "$build/wheels/requirements.txt" "async-timeout>=4.0.3"
  echo "$stamp" >"$build/wheels/.pyproject"
fi
# The Node sample bot's packages (`make node-deps`), when this machine has them.
if [ -d sample_bots/node/node_modules ]; then
  rm -rf "$build/node_modules" && cp -a sample_bots/node/node_modules "$build/node_modules"
fi

default=$build/docker-default-seccomp.json
if [ ! -s "$default" ]; then
  echo "image.sh: Docker's default seccomp profile from Debian's golang-github-docker-docker-dev"
  tmp=$(mktemp -d)
  (cd "$tmp" && timeout 300 apt-get download -qq golang-github-docker-docker-dev 2>/dev/null) || {
    echo "image.sh: apt-get download golang-github-docker-docker-dev failed" >&2; rm -rf "$tmp"; exit 1; }
  dpkg-deb --fsys-tarfile "$tmp"/*.deb | tar -xO --wildcards '*/profiles/seccomp/default.json' >"$default"
  rm -rf "$tmp"
fi
python3 deploy/docker/seccomp.py "$default" "$build/seccomp-worker.json"

echo "image.sh: docker build -t $image (FROM $base)"
docker build --quiet --build-arg "BASE_IMAGE=$base" -t "$image" . >/dev/null
echo "image.sh: built $image ($(docker image inspect -f '{{.Size}}' "$image") bytes)"
