"""The arena's typed errors: ``ArenaError`` and its kin, raised on purpose and translated by the front ends
(the API to gRPC status codes, the web to HTTP statuses: docs/arena.md, "The layers").

``ValidationError`` (and so each of its kin) is also a ``ValueError``; ``UnknownBotError`` and
``UnknownLadderError`` are also ``KeyError``s.  Plain classes: they import nothing.
"""

from __future__ import annotations


class ArenaError(Exception):
    """Base class of every error the arena raises on purpose."""


class ValidationError(ArenaError, ValueError):
    """Input (a name, an endpoint, a spec...) is malformed; nothing was changed."""


class ManifestError(ValidationError):
    """A bot manifest is malformed; the message names the bad key."""


class AuthError(ArenaError):
    """The token given is neither the bot owner's token nor the admin token."""


class UnknownBotError(ArenaError, KeyError):
    """No bot with that id (or name) is registered."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else "unknown bot"


class NameTakenError(ValidationError):
    """Another bot already uses that name."""


class RetiredBotError(ArenaError):
    """The bot is retired and can no longer be updated or scheduled."""


class UnknownLadderError(ArenaError, KeyError):
    """No ladder with that id exists."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown ladder"


class NotFoundError(ArenaError):
    """A match, dead letter or other thing the request names does not exist."""


class Unauthenticated(AuthError):
    """The call needs a token and none was given."""


class NotRequeueable(ArenaError):
    """A dead letter that cannot be played again: its spec is malformed, or its match has a result."""


class NotPlayable(ArenaError):
    """The bot has no version that may play yet (an uploaded package still pending, or rejected)."""


class EndpointRefused(ArenaError):
    """An endpoint bot failed its registration check (no Handshake in time, or not the rulesets it claims)."""
