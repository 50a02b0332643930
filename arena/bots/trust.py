"""Who may add which kind of bot, and the check an endpoint bot passes before it is registered.

Three kinds of bot, three levels of trust (docs/arena.md, "Trust"):

* an **operator manifest** names a command the workers run as themselves: registering or updating one
  takes the admin token (without it: refused, nothing stored, nothing run);
* an **endpoint** bot runs wherever its author runs it: its owner may register one (``require_owner``: the
  owner token of an owner the operator added, where registration is not open), once it answers a Handshake
  within a deadline listing every ruleset it is registered for;
* an **uploaded package** runs in the sandbox (``arena.sandbox``); registering one takes the same as an
  endpoint.

The registration key is stored as its sha256 only, like the tokens; whether one is set says whether the
arena's registration is open (anyone, any owner name) or closed (owners the operator added).

Also here, the two things that keep what the arena knows from those it must not reach:

* ``check_endpoint_policy``: an endpoint's host (an address, or a DNS name resolved once, every address it
  gives checked) must not be on a network the operator's ``Policy`` refuses (loopback, link-local...) unless
  its allow-list names it, nor name one of the arena's own service ports;
* ``Seeds``: every match the arena deals itself has a seed derived from a secret kept in Redis (an
  HMAC of the match id), which no bot can read: it is published with the finished record only.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import secrets
import socket
import time
from collections.abc import Callable, Sequence
from concurrent import futures
from typing import Any

import grpc
import redis
from pilotta.arena.v1 import bot_pb2_grpc

from arena.bots.limits import Policy, clip
from arena.bots.owners import Owners
from arena.bots.registry import Registry
from arena.bots.tokens import new_token, sha256_hex
from arena.model import AuthError, EndpointRefused, ValidationError
from arena.store import keys
from referee.match import wire

log = logging.getLogger(__name__)

HANDSHAKE_DEADLINE_S = 5.0
RESOLVE_DEADLINE_S = 5.0
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


def require_owner(registry: Registry, owner: str, token: str) -> None:
    """A new bot that is not an operator manifest, under ``owner``: the admin token (any owner), or the owner
    token of ``owner``, an owner the operator added (``arena.bots.owners``).  An owner nobody added is
    refused, except on an arena with open registration (no registration key: ``arena up
    --open-registration``, a test's bare arena), where owners are the names their authors write, as before
    owners existed; even there, an owner that was added takes its token.  The error names what was wrong:
    an owner not registered, revoked, no token, or not its token."""
    if token and registry.is_admin(token):
        return
    owners = Owners(registry.r)
    if owners.get(owner) is None and not registration_key_required(registry):
        return
    owners.require(owner, token)


def require_operator(registry: Registry, token: str) -> None:
    """The admin token, for an operator manifest: a command the workers would run as themselves."""
    # PERMISSION_DENIED with or without a token: no owner token or key can ever be enough.
    if not token or not registry.is_admin(token):
        raise AuthError(
            "a manifest bot runs on the workers as the operator's own command: registering or updating one "
            "takes the admin token; upload a package (`arena bot submit`) or register an endpoint instead"
        )


def hold_until(deadline: float) -> None:
    """Return at ``deadline`` (``time.monotonic``), not before: sleeps what is left of it, if anything."""
    time.sleep(max(0.0, deadline - time.monotonic()))


def check_endpoint(
    endpoint: str,
    rulesets: Sequence[str],
    deadline_s: float = HANDSHAKE_DEADLINE_S,
    hold: Callable[[float], None] = hold_until,
) -> None:
    """EndpointRefused (naming the reason) unless the bot at ``endpoint`` answers a Handshake within
    ``deadline_s`` listing every one of ``rulesets``.  Whatever kept it from answering (nothing listens, a
    silent port, another service) gets the one reason "unreachable", and at the one time: ``deadline_s``
    after the call began (``hold``), however soon it failed. Told apart by their words or their timing (a
    closed port refuses at once, a silent one lets the deadline pass), they would make registration a port
    scanner.  The details go to the API's log."""
    request = wire.handshake_request(REFEREE_NAME, wire.PROTOCOL_VERSIONS)
    began = time.monotonic()
    with grpc.insecure_channel(endpoint) as channel:
        try:
            reply = bot_pb2_grpc.BotStub(channel).Handshake(request, timeout=deadline_s)
        except grpc.RpcError as e:
            log.info("endpoint %s: Handshake failed: %s %s", endpoint, e.code().name, clip(e.details(), 200))
            hold(began + deadline_s)
            raise EndpointRefused(
                f"endpoint {endpoint} refused: unreachable (no Handshake answer within {deadline_s:g} s)"
            ) from None
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


def _host_port(endpoint: str) -> tuple[str, int]:
    host, _, port = endpoint.rpartition(":")
    return host.strip("[]"), int(port)


def is_address(endpoint: str) -> bool:
    """Whether an endpoint's host is an IP address (not a DNS name)."""
    try:
        ipaddress.ip_address(_host_port(endpoint)[0])
    except ValueError:
        return False
    return True


def _resolve(host: str, port: int, deadline_s: float) -> list[str]:
    """Every address ``host`` resolves to (one lookup, bounded by ``deadline_s``)."""
    pool = futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="resolve")
    try:
        infos = pool.submit(socket.getaddrinfo, host, port, 0, socket.SOCK_STREAM).result(timeout=deadline_s)
    except futures.TimeoutError:
        raise EndpointRefused(f"endpoint host {clip(host)} refused: no DNS answer within {deadline_s:g} s") from None
    except OSError:
        raise EndpointRefused(f"endpoint host {clip(host)} refused: it does not resolve") from None
    finally:
        pool.shutdown(wait=False)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def check_endpoint_policy(
    endpoint: str, policy: Policy, own_ports: Sequence[int] = (), deadline_s: float = RESOLVE_DEADLINE_S
) -> str:
    """EndpointRefused unless ``endpoint`` (a checked ``host:port``) may be dialled under ``policy``: its
    port is none of the arena's (the policy's ``refused_ports`` and ``own_ports``, e.g. its Redis's), and
    every address of its host is off the refused networks, or on an allowed one.  A DNS name is resolved
    once here; returns the address to dial for the registration check (the first one, as ``ip:port``), so
    the check talks to an address that was checked."""
    host, port = _host_port(endpoint)
    if port in policy.refused_ports or port in own_ports:
        raise EndpointRefused(f"endpoint {endpoint} refused: port {port} is one of the arena's own services")
    try:
        addresses = [str(ipaddress.ip_address(host))]
    except ValueError:
        addresses = _resolve(host, port, deadline_s)
    if not addresses:
        raise EndpointRefused(f"endpoint host {clip(host)} refused: it does not resolve")
    allowed = [ipaddress.ip_network(n, strict=False) for n in policy.allow_networks]
    refused = [ipaddress.ip_network(n, strict=False) for n in policy.refused_networks]
    for text in addresses:
        address: Any = ipaddress.ip_address(text)  # Any: IPv4Address | IPv6Address, checked against either
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped  # ::ffff:127.0.0.1 is loopback too
        if any(address.version == n.version and address in n for n in allowed):
            continue
        bad = next((n for n in refused if address.version == n.version and address in n), None)
        if bad is not None:
            shown = "" if text == host else f" ({host} resolves to {text})"
            raise EndpointRefused(
                f"endpoint {endpoint} refused{shown}: the network {bad} is not allowed for endpoint bots "
                "(the operator's policy: allow_networks)"
            )
    first = addresses[0]
    return f"[{first}]:{port}" if ":" in first else f"{first}:{port}"


def seed_secret(r: redis.Redis) -> bytes:
    """The arena's seed secret, made the first time it is needed (SET NX: every process agrees on one)."""
    r.set(keys.SEED_SECRET, secrets.token_hex(32), nx=True)
    raw: Any = r.get(keys.SEED_SECRET)
    return bytes.fromhex(str(raw))


class Seeds:
    """The seeds of the matches the arena deals itself: HMAC-SHA256 of the match id with the seed secret,
    63 bits.  The secret is read from Redis once per instance (it never changes)."""

    def __init__(self, r: redis.Redis) -> None:
        self.r = r
        self._secret: bytes | None = None

    def seed(self, match_id: str) -> int:
        if self._secret is None:
            self._secret = seed_secret(self.r)
        digest = hmac.new(self._secret, match_id.encode(), hashlib.sha256).digest()
        return int.from_bytes(digest[:8], "big") >> 1

    def for_attempt(self, match_id: str, seed: int, attempt: int) -> int:
        """The seed attempt ``attempt`` (from 1) at a match deals from: the match's own the first time; for a
        later one (its worker died, hung or failed mid-match) one of its own (of ``<match id>/<attempt>``), so
        that who saw the first attempt's boards (its bots, anyone who watched it live) knows nothing of the
        next one's. A seed its challenger chose, not the arena's, is kept: the challenger knows it anyway."""
        if attempt <= 1 or seed != self.seed(match_id):
            return seed
        return self.seed(f"{match_id}/{attempt}")
