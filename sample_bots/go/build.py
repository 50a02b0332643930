"""Build the Go sample bot (``make`` in this directory) for the tests, once, or say why it cannot be built.

``build()`` runs ``make`` and ``make package`` under ``nice``, offline: Debian's Go toolchain and its gRPC and
protobuf libraries from ``/usr/share/gocode`` (GOPATH mode, no module proxy). The first run compiles the bot
and gRPC (about a minute and a half on a loaded machine), later runs find it up to date. The static executable
lands in ``build/`` here (ignored by git), where ``manifest.json`` runs it from; ``build/package`` is the
uploadable package (docs/submitting.md).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sample_bots.make_build import CannotBuild, make_bot

__all__ = ["CannotBuild", "build", "missing"]  # CannotBuild: what the tests catch

HERE = Path(__file__).resolve().parent
BUILD = HERE / "build"
EXECUTABLE = BUILD / "pilotta-go-bot"
PACKAGE = BUILD / "package"
GOCODE = Path("/usr/share/gocode/src")
DEBIAN_PACKAGES = (
    "golang-go golang-google-grpc-dev golang-google-protobuf-dev golang-github-golang-protobuf-1-5-dev "
    "protoc-gen-go protoc-gen-go-grpc protobuf-compiler make"
)


def missing() -> str | None:
    """What this machine lacks to build the bot, or None."""
    for tool in ("make", "go", "protoc", "protoc-gen-go", "protoc-gen-go-grpc"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (Debian: {DEBIAN_PACKAGES})"
    for library in ("google.golang.org/grpc", "google.golang.org/protobuf", "github.com/golang/protobuf"):
        if not (GOCODE / library).is_dir():
            return f"{GOCODE / library} is missing (Debian: {DEBIAN_PACKAGES})"
    # gRPC 1.33 reads messages through github.com/golang/protobuf: version 1.3 of it (a choice apt may make for
    # golang-google-grpc-dev) cannot read the messages protoc-gen-go generates, and the bot panics at its
    # first call. Version 1.5 is a layer over google.golang.org/protobuf, with registry.go.
    if not (GOCODE / "github.com/golang/protobuf/proto/registry.go").is_file():
        return (
            "github.com/golang/protobuf is version 1.3 (golang-github-golang-protobuf-1-3-dev), which cannot read "
            "the generated messages: install golang-github-golang-protobuf-1-5-dev"
        )
    return None


def build(timeout_s: float = 900.0) -> Path:
    """The built bot's directory (this one); raises ``CannotBuild`` when the toolchain is missing and
    ``RuntimeError`` with make's output when the build fails."""
    return make_bot(HERE, missing, timeout_s)
