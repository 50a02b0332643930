#!/usr/bin/env bash
# Fail when the committed generated code in proto/pilotta/arena/v1 is not what generate.sh produces from
# the .proto files now (someone edited a .proto and forgot to regenerate, or edited generated code).
# `make test` runs it. Exit 0: fresh; exit 1: stale (the diff is printed); exit 2: the tools are missing.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

"$here/generate.sh" "$tmp"

stale=0
gen_dir="$tmp/pilotta/arena/v1"
committed_dir="$here/pilotta/arena/v1"
for path in "$gen_dir"/*; do
  name="$(basename "$path")"
  if [[ ! -f "$committed_dir/$name" ]]; then
    echo "missing: proto/pilotta/arena/v1/$name is generated but not committed" >&2
    stale=1
  elif ! cmp -s "$path" "$committed_dir/$name"; then
    echo "stale: proto/pilotta/arena/v1/$name differs from what generate.sh produces:" >&2
    diff -u "$committed_dir/$name" "$path" | head -n 40 >&2 || true
    stale=1
  fi
done
# Generated files whose .proto is gone.
for path in "$committed_dir"/*_pb2.py "$committed_dir"/*_pb2_grpc.py "$committed_dir"/*_pb2.pyi "$committed_dir"/*_pb2_grpc.pyi; do
  [[ -e "$path" ]] || continue
  name="$(basename "$path")"
  if [[ ! -f "$gen_dir/$name" ]]; then
    echo "orphan: proto/pilotta/arena/v1/$name has no .proto any more (delete it)" >&2
    stale=1
  fi
done

if [[ "$stale" -ne 0 ]]; then
  echo >&2
  echo "The generated protocol code is stale. Run proto/generate.sh and commit the result." >&2
  echo "(If only version lines differ, your grpcio-tools/protobuf/mypy-protobuf versions differ from the" >&2
  echo " ones the committed code was generated with: use the project's venv.)" >&2
  exit 1
fi
echo "generated protocol code is fresh"
