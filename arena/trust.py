"""Who may add which kind of bot, and the check an endpoint bot passes before it is registered.

Three kinds of bot, three levels of trust (docs/arena.md, "Trust"):

* an **operator manifest** names a command the workers run as themselves: registering or updating one
  takes the admin token (without it: refused, nothing stored, nothing run);
* an **endpoint** bot runs wherever its author runs it: anyone may register one (with the registration key
  when the operator requires one), once it answers a Handshake within a deadline listing every ruleset it
  is registered for;
* an **uploaded package** runs in the sandbox (``arena.sandbox``); registering one takes the registration key
  when one is required.

The registration key is stored as its sha256 only, like the tokens.
"""

from __future__ import annotations

import hmac
from collections.abc import Sequence

import grpc
from pilotta.arena.v1 import bot_pb2_grpc

from arena import keys
from arena.model import AuthError, EndpointRefused, Unauthenticated, ValidationError
from arena.registry import Registry, new_token, sha256_hex
from referee import wire

HANDSHAKE_DEADLINE_S = 5.0
REFEREE_NAME = "pilotta-arena registration check"


def set_registration_key(registry: Registry, key: str | None = None) -> str:
    """Require this registration key (generated if None) from now on; returns it."""
    key = key or new_token(18)
    if len(key) < 12:
        raise ValidationError("a registration key must be at least 12 characters")
    registry.r.set(keys.REGISTRATION_KEY_HASH, sha256_hex(key))
    return key


def open_registration(registry: Registry) -> None:
    """No registration key from now on: anyone may register an endpoint bot or upload a package."""
    registry.r.delete(keys.REGISTRATION_KEY_HASH)


def registration_key_required(registry: Registry) -> bool:
    return bool(registry.r.exists(keys.REGISTRATION_KEY_HASH))


def require_registration(registry: Registry, key: str, token: str) -> None:
    """The registration key (when the operator requires one) or the admin token, for a new bot that is not
    an operator manifest.  Unauthenticated without either; AuthError with a wrong one."""
    stored = registry.r.get(keys.REGISTRATION_KEY_HASH)
    if not stored or (token and registry.is_admin(token)):
        return
    if not key:
        raise Unauthenticated("this arena requires its registration key to register a bot (ask its operator)")
    if not hmac.compare_digest(str(stored), sha256_hex(key)):
        raise AuthError("the registration key is not this arena's")


def require_operator(registry: Registry, token: str) -> None:
    """The admin token, for an operator manifest: a command the workers would run as themselves."""
    # PERMISSION_DENIED with or without a token: no owner token or key can ever be enough.
    if not token or not registry.is_admin(token):
        raise AuthError(
            "a manifest bot runs on the workers as the operator's own command: registering or updating one "
            "takes the admin token; upload a package (`arena bot submit`) or register an endpoint instead"
        )


def check_endpoint(endpoint: str, rulesets: Sequence[str], deadline_s: float = HANDSHAKE_DEADLINE_S) -> None:
    """EndpointRefused (naming the reason) unless the bot at ``endpoint`` answers a Handshake within
    ``deadline_s`` listing every one of ``rulesets``."""
    request = wire.handshake_request(REFEREE_NAME, wire.PROTOCOL_VERSIONS)
    with grpc.insecure_channel(endpoint) as channel:
        try:
            reply = bot_pb2_grpc.BotStub(channel).Handshake(request, timeout=deadline_s)
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                why = f"no Handshake answer within {deadline_s:g} s"
            elif e.code() == grpc.StatusCode.UNAVAILABLE:
                why = "nothing answers there (connection refused or unreachable)"
            else:
                why = f"its Handshake failed with {e.code().name}"
            raise EndpointRefused(f"endpoint {endpoint} refused: {why}") from None
    listed = wire.handshake_rulesets(reply)
    missing = [r for r in rulesets if r not in listed]
    if missing:
        raise EndpointRefused(
            f"endpoint {endpoint} refused: its Handshake does not list {', '.join(missing)} "
            f"(it lists {', '.join(listed) or 'none'})"
        )
    if wire.reply_protocol_version(reply) not in wire.PROTOCOL_VERSIONS:
        raise EndpointRefused(
            f"endpoint {endpoint} refused: it speaks protocol version {wire.reply_protocol_version(reply)}"
        )
