"""The owner and admin tokens: how they are made, stored and checked.

A token is shown once (a bot's token when it is registered, an owner's when the operator adds the owner,
the admin token when it is set) and Redis keeps only its sha256, so a leaked dump does not leak tokens.
Every check compares hashes in constant time.  ``Tokens`` is the part of the registry that reads and checks
them (``Registry`` is a ``Tokens``); the owners themselves are ``arena.bots.owners``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from arena.model import AuthError, Unauthenticated, ValidationError
from arena.store import keys


def new_token(nbytes: int) -> str:
    """A random URL-safe token that does not start with "-", which a command line would take for an option
    (``arena bot retire NAME --token -x...`` fails to parse)."""
    while True:
        token = secrets.token_urlsafe(nbytes)
        if not token.startswith("-"):
            return token


def sha256_hex(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class OwnerRecord:
    """An owner as the arena keeps it: when it was added, when revoked (0: not), its token's sha256."""

    name: str
    created: float
    revoked: float
    token_sha256: str

    def to_json(self) -> str:
        return json.dumps({"token_sha256": self.token_sha256, "created": self.created, "revoked": self.revoked})

    @staticmethod
    def from_json(name: str, raw: str) -> OwnerRecord:
        d = json.loads(raw)
        return OwnerRecord(name, float(d["created"]), float(d.get("revoked") or 0), str(d["token_sha256"]))

    def accepts(self, digest: str) -> bool:
        """Whether a token of sha256 ``digest`` is this owner's, and the owner not revoked; constant time."""
        return hmac.compare_digest(self.token_sha256, digest) and not self.revoked


class Tokens:
    """The admin token and the checks of bot and owner tokens, on the registry's Redis."""

    # Any: redis-py's stubs type replies as bytes | str and cannot know the
    # client was made with decode_responses=True (see redis_server.connect).
    r: Any

    def set_admin_token(self, token: str | None = None, *, replace: bool = False) -> str:
        """Store the sha256 of the admin token (generated if None) and return the token.

        Without ``replace`` an existing admin token is kept and AuthError raised,
        so a second deploy cannot silently lock out the first admin.
        """
        token = token or new_token(32)
        if len(token) < 16:
            raise ValidationError("admin token must be at least 16 characters")
        if replace:
            self.r.set(keys.ADMIN_TOKEN_HASH, sha256_hex(token))
        elif not self.r.set(keys.ADMIN_TOKEN_HASH, sha256_hex(token), nx=True):
            raise AuthError("an admin token is already set; pass replace=True to rotate it")
        return token

    def is_admin(self, token: str) -> bool:
        stored = self.r.get(keys.ADMIN_TOKEN_HASH)
        return bool(stored) and hmac.compare_digest(str(stored), sha256_hex(token))

    def require_admin(self, token: str) -> None:
        """Unauthenticated without a token, AuthError with one that is not the admin token."""
        if not token:
            raise Unauthenticated("the admin token is required (printed by `arena up`, kept in its data dir)")
        if not self.is_admin(token):
            raise AuthError("token is not the admin token")

    def authorize(self, token: str, bot_ids: Sequence[str], refused: str | None = None) -> None:
        """The one owner-token check: ``token`` must be a token of one of ``bot_ids`` (``token_owns``), or the
        admin token.  Unauthenticated without a token; AuthError (with ``refused`` as its message, if given)
        otherwise.  The comparisons are constant-time and only hashes are read."""
        if not isinstance(token, str) or not token:
            raise Unauthenticated("a token is required: the bot's owner token or the admin token")
        is_admin, owned = self.token_owns(token, bot_ids)
        if not is_admin and not owned:
            raise AuthError(
                refused or "token is not valid: need the owner token of one of these bots or the admin token"
            )

    def token_owns(self, token: str, bot_ids: Sequence[str]) -> tuple[bool, list[str]]:
        """Whether ``token`` is the admin token, and which of ``bot_ids`` it is a token of: the bot's own (made
        when it was registered) or its owner's (``arena.bots.owners``), unless that owner is revoked (constant
        time comparisons of hashes, every one made)."""
        if not isinstance(token, str) or not token:
            return False, []
        digest = sha256_hex(token)
        with self.r.pipeline(transaction=False) as p:
            p.get(keys.ADMIN_TOKEN_HASH)
            for b in bot_ids:
                p.hmget(keys.bot(b), ["token_sha256", "owner"])
            admin, *bots = p.execute()
        names = sorted({str(owner) for _h, owner in bots if owner is not None})
        raw = self.r.hmget(keys.OWNERS, names) if names else []
        records = {n: OwnerRecord.from_json(n, str(x)) for n, x in zip(names, raw, strict=True) if x is not None}
        # Every hash is compared (no early exit), so the time taken says nothing about which matched.
        is_admin = bool(admin) and hmac.compare_digest(str(admin), digest)
        owned = []
        for b, (h, owner) in zip(bot_ids, bots, strict=True):
            record = records.get(str(owner))
            own = bool(h) and hmac.compare_digest(str(h), digest)
            by_owner = record is not None and record.accepts(digest)
            # A revoked owner's bots answer to no token of theirs: neither its own nor the owner's.
            if (own or by_owner) and not (record is not None and record.revoked):
                owned.append(b)
        return is_admin, owned
