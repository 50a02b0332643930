"""Owners: identities the operator adds (``arena owner add NAME``), each with an owner token, not names anyone
can invent.

An owner token is made once, shown once, and Redis keeps only its sha256 (``pa:owners``: name -> record), as
for the other tokens (``arena.bots.tokens``).  It admits a new bot under its owner (``require``: where the
arena's registration is closed, an owner nobody added is refused: ``trust.require_owner``) and stands for
every bot of that owner in the owner's own calls (versions, status, logs, retire, challenges:
``Tokens.token_owns``).  Revoking an owner ends
its token, and the tokens of its bots with it; adding the name again issues a new token (a rotation).  Adding
a name that bots were registered under before owners existed adopts them: their owner token is the new one
(their own bot tokens keep working until the owner is revoked).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from arena.bots.inputs import validate_owner
from arena.bots.limits import clip
from arena.bots.tokens import OwnerRecord, new_token, sha256_hex
from arena.model import AuthError, NameTakenError, NotFoundError, Unauthenticated
from arena.store import keys


@dataclass(frozen=True)
class OwnerInfo:
    """An owner as the operator's list shows it: with its active bots."""

    name: str
    created: float
    revoked: float
    active_bots: int


def not_registered(name: str) -> AuthError:
    return AuthError(
        f"owner {clip(name)} is not registered on this arena: owners are added by its operator "
        f"(`arena owner add NAME`), who gives each its owner token"
    )


class Owners:
    """The owners the operator added, on the arena's Redis."""

    def __init__(self, r: Any) -> None:
        # Any: redis-py's stubs type replies as bytes | str (the client decodes: redis_server.connect).
        self.r: Any = r

    def get(self, name: str) -> OwnerRecord | None:
        raw = self.r.hget(keys.OWNERS, name)
        return None if raw is None else OwnerRecord.from_json(name, str(raw))

    def add(self, name: str) -> tuple[OwnerInfo, str]:
        """Add an owner (or add again one that was revoked: a new token) and return it with its owner token,
        shown only now.  NameTakenError if it is registered and not revoked: its token is not replaced
        unasked (revoke it first).  Bots registered under the name before are its bots from now on."""
        validate_owner(name)
        token = new_token(24)
        record = OwnerRecord(name, time.time(), 0.0, sha256_hex(token))
        # One script: two operators adding one name at once cannot both get a token that works.
        if not self.r.eval(_ADD_LUA, 1, keys.OWNERS, name, record.to_json()):
            raise NameTakenError(
                f"owner {clip(name)} is already registered; `arena owner revoke` it first to issue a new token"
            )
        return self._info(record), token

    def revoke(self, name: str) -> OwnerInfo:
        """The owner's token admits nothing from now on, nor do its bots' own tokens; its bots stay (retire
        them with the admin token if they should not play)."""
        record = self.get(name)
        if record is None:
            raise NotFoundError(f"no owner {clip(name)} on this arena (`arena owner list`)")
        if not record.revoked:
            record = OwnerRecord(name, record.created, time.time(), record.token_sha256)
            self.r.hset(keys.OWNERS, name, record.to_json())
        return self._info(record)

    def list(self) -> list[OwnerInfo]:
        """Every owner added, by name."""
        raw = self.r.hgetall(keys.OWNERS)
        counts = self.r.hgetall(keys.OWNER_BOTS)
        return [
            OwnerInfo(n, r.created, r.revoked, max(0, int(counts.get(n, 0))))
            for n, r in sorted((n, OwnerRecord.from_json(n, x)) for n, x in raw.items())
        ]

    def require(self, name: str, token: str) -> None:
        """A new bot under owner ``name`` with ``token``: AuthError unless ``name`` is a registered owner, not
        revoked, and ``token`` its owner token (Unauthenticated without a token)."""
        record = self.get(name)
        if record is None:
            raise not_registered(name)
        if record.revoked:
            raise AuthError(f"owner {clip(name)} was revoked by the operator: its token admits no bot")
        if not token:
            raise Unauthenticated(f"a bot of owner {clip(name)} takes that owner's token (`--token`)")
        if not record.accepts(sha256_hex(token)):
            raise AuthError(f"token is not the owner token of {clip(name)}")

    def _info(self, record: OwnerRecord) -> OwnerInfo:
        active = max(0, int(self.r.hget(keys.OWNER_BOTS, record.name) or 0))
        return OwnerInfo(record.name, record.created, record.revoked, active)


# KEYS: the owners hash.  ARGV: name, the new record.  Adds it unless a record that is not revoked is there.
_ADD_LUA = """
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if raw and (tonumber(cjson.decode(raw)['revoked']) or 0) == 0 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
"""
