#!/usr/bin/env bash
# Regenerate the Python code of the protocol from proto/pilotta/arena/v1/*.proto:
#   *_pb2.py (messages), *_pb2_grpc.py (stubs and servicers), *_pb2.pyi and *_pb2_grpc.pyi (types, by
#   mypy-protobuf, so that mypy checks code using them).
#
# Usage: proto/generate.sh [OUT_DIR]
#   OUT_DIR defaults to proto/ itself, so the files land next to their .proto files (the `pilotta` package
#   of pyproject.toml). check_fresh.sh passes a temporary directory instead.
#
# The interpreter is $PYTHON, else the repo's .venv, else python3. Its grpcio-tools carries the protoc
# that runs, so the output depends only on the .proto files and the pinned tool versions: run it with the
# same versions (the venv's) and the output is byte-for-byte the same.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
out="${1:-$here}"

if [[ -n "${PYTHON:-}" ]]; then
  python="$PYTHON"
elif [[ -x "$repo/.venv/bin/python" ]]; then
  python="$repo/.venv/bin/python"
else
  python="$(command -v python3)"
fi

# mypy-protobuf installs its plugins beside the interpreter; fall back to PATH.
find_plugin() {
  local found="$(dirname "$python")/$1"
  if [[ ! -x "$found" ]]; then
    found="$(command -v "$1" || true)"
  fi
  if [[ -z "$found" ]]; then
    echo "generate.sh: $1 not found (pip install mypy-protobuf into $python's environment)" >&2
    exit 2
  fi
  echo "$found"
}
plugin="$(find_plugin protoc-gen-mypy)"
grpc_plugin="$(find_plugin protoc-gen-mypy_grpc)"
if ! "$python" -c 'import grpc_tools.protoc' 2>/dev/null; then
  echo "generate.sh: grpc_tools not importable by $python (pip install grpcio-tools)" >&2
  exit 2
fi

# Paths are given relative to proto/ so that the generated imports read `from pilotta.arena.v1 import ...`.
# LC_ALL=C makes the glob's order, and so protoc's input order, the same everywhere.
cd "$here"
export LC_ALL=C
mapfile -t protos < <(printf '%s\n' pilotta/arena/v1/*.proto | sort)
mkdir -p "$out"
# mypy-protobuf says "Writing mypy to ..." for every file: keep protoc's other messages, drop those.
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
"$python" -m grpc_tools.protoc \
  --proto_path=. \
  --plugin=protoc-gen-mypy="$plugin" \
  --plugin=protoc-gen-mypy_grpc="$grpc_plugin" \
  --python_out="$out" \
  --grpc_python_out="$out" \
  --mypy_out="$out" \
  --mypy_grpc_out="$out" \
  "${protos[@]}" >"$log" 2>&1 || status=$?
grep -v -E '^Writing mypy(_grpc)? to ' "$log" >&2 || true
if [[ "$status" -ne 0 ]]; then
  echo "generate.sh: protoc failed (exit $status)" >&2
fi
exit "$status"
