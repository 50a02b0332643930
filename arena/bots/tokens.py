"""The owner and admin tokens: how they are made, stored and checked.

A token is shown once (an owner token when its bot is registered, the admin token when it is set) and Redis
keeps only its sha256, so a leaked dump does not leak tokens.  Every check compares hashes in constant time.
``Tokens`` is the part of the registry that reads and checks them (``Registry`` is a ``Tokens``).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Sequence
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


class Tokens:
    """The admin token and the owner-token checks, on the registry's Redis."""

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
        """The one owner-token check: ``token`` must be the owner token of one of ``bot_ids``, or the admin
        token.  Unauthenticated without a token; AuthError (with ``refused`` as its message, if given)
        otherwise.  The comparisons are constant-time and only hashes are read."""
        if not isinstance(token, str) or not token:
            raise Unauthenticated("a token is required: the bot's owner token or the admin token")
        digest = sha256_hex(token)
        with self.r.pipeline(transaction=False) as p:
            p.get(keys.ADMIN_TOKEN_HASH)
            for b in bot_ids:
                p.hget(keys.bot(b), "token_sha256")
            admin, *owners = p.execute()
        # Every hash is compared (no early exit), so the time taken says nothing about which matched.
        matches = [hmac.compare_digest(str(h), digest) for h in (admin, *owners) if h]
        if not any(matches):
            raise AuthError(
                refused or "token is not valid: need the owner token of one of these bots or the admin token"
            )

    def token_owns(self, token: str, bot_ids: Sequence[str]) -> tuple[bool, list[str]]:
        """Whether ``token`` is the admin token, and which of ``bot_ids`` it is the owner token of (constant
        time comparisons of hashes, every one made)."""
        if not isinstance(token, str) or not token:
            return False, []
        digest = sha256_hex(token)
        with self.r.pipeline(transaction=False) as p:
            p.get(keys.ADMIN_TOKEN_HASH)
            for b in bot_ids:
                p.hget(keys.bot(b), "token_sha256")
            admin, *owners = p.execute()
        is_admin = bool(admin) and hmac.compare_digest(str(admin), digest)
        owned = [b for b, h in zip(bot_ids, owners, strict=True) if h and hmac.compare_digest(str(h), digest)]
        return is_admin, owned
