#!/usr/bin/env bash
# The compose deployment's secret files (deploy/secrets/, git-ignored), made once: the Redis password.
# Readable by the containers' arena user (uid and group 10001 inside, which the engine's user namespace
# maps to 10001 + the start of dockremap's range in /etc/subuid) and by nobody else on the host.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p secrets
chmod 0755 secrets
file=secrets/redis-password
if [ ! -s "$file" ]; then
  (umask 077 && python3 -c 'import secrets; print(secrets.token_hex(32))' >"$file")
fi
uid_base=$(awk -F: '$1 == "dockremap" {print $2}' /etc/subuid)
gid_base=$(awk -F: '$1 == "dockremap" {print $2}' /etc/subgid)
if [ -n "$uid_base" ] && [ -n "$gid_base" ]; then
  chown "$((uid_base + 10001)):$((gid_base + 10001))" "$file"
  chmod 0440 "$file"
else
  echo "secrets.sh: no dockremap range in /etc/subuid: is the engine running with --userns-remap=default?" >&2
  exit 1
fi
