#!/usr/bin/env bash
# Start a Docker engine on this machine for `make image`, `make deploy-up` and the compose system test
# (tests/deploy/test_compose_system.py): installs Debian's docker.io, docker-compose and debootstrap when they
# are missing, starts dockerd when no engine answers, and waits (bounded) until it does.
#
#   deploy/docker/engine.sh          # exit 0: an engine answers on /var/run/docker.sock
#   deploy/docker/engine.sh --check  # only say whether one answers, install and start nothing
#
# The engine runs with user namespaces (--userns-remap=default: root in a container is uid 100000-odd on the
# host, not root): a worker container needs root in its own namespace to give each sandboxed bot a uid of
# its own, and its /proc unmasked for bubblewrap, which for the host's root would leave the host's sysctls
# writable (docs/operating.md). An engine already running without it is said so, not restarted.
#
# Where it cannot run (not root, no package, dockerd exits) it says why on stderr and exits 1; the
# tests then skip the Docker tests with that reason (tests/deploy/docker_env.py).
set -euo pipefail

log=${DOCKERD_LOG:-/var/log/arena-dockerd.log}
wait_s=${DOCKERD_WAIT_S:-60}

answers() { timeout 10 docker info >/dev/null 2>&1; }
remapped() { timeout 10 docker info --format '{{json .SecurityOptions}}' 2>/dev/null | grep -q 'name=userns'; }

if answers; then
  remapped || echo "engine.sh: the running Docker engine has no user namespaces (--userns-remap): the worker containers of deploy/docker-compose.yml will refuse to start (docs/operating.md)" >&2
  exit 0
fi
if [ "${1:-}" = "--check" ]; then
  echo "engine.sh: no Docker engine answers on ${DOCKER_HOST:-unix:///var/run/docker.sock}" >&2
  exit 1
fi
if [ "$(id -u)" != 0 ]; then
  echo "engine.sh: no Docker engine answers, and starting one needs root (uid $(id -u))" >&2
  exit 1
fi

need=()
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
command -v docker-compose >/dev/null 2>&1 || need+=(docker-compose)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
if [ ${#need[@]} -gt 0 ]; then
  echo "engine.sh: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  timeout 900 apt-get update -qq
  # The package's own service start (policy-rc.d) is refused: no systemd here; dockerd is started below.
  if ! timeout 1800 apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null; then
    echo "engine.sh: apt-get install ${need[*]} failed" >&2
    exit 1
  fi
fi

if ! pgrep -x dockerd >/dev/null 2>&1; then
  echo "engine.sh: starting dockerd (log: $log)"
  # setsid: dockerd outlives this script and the make or test that called it.
  setsid dockerd --storage-driver=overlay2 --userns-remap=default >>"$log" 2>&1 </dev/null &
fi
for _ in $(seq "$wait_s"); do
  if answers; then exit 0; fi
  if ! pgrep -x dockerd >/dev/null 2>&1; then
    echo "engine.sh: dockerd exited; the end of $log:" >&2
    tail -20 "$log" >&2
    exit 1
  fi
  sleep 1
done
echo "engine.sh: dockerd did not answer within ${wait_s} s; the end of $log:" >&2
tail -20 "$log" >&2
exit 1
