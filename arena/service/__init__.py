"""What the arena does, in one place: the ``Arena`` object that the gRPC API and the web pages call.

``Arena(redis_client)`` owns the registry, the queue, the ratings, the scheduler, the ladders and the read
model (``arena.views``); its methods are the arena's operations, each one authorized where it changes
something (an owner token or the admin token) and each one refusing bad input with a typed error from
``arena.model`` (``ValidationError``, ``UnknownBotError``, ``AuthError``...) that names what was wrong.
The transports only translate: ``arena.api`` to gRPC status codes, ``arena.web`` to HTTP.

By concern: ``arena`` (``Arena``, the one entry point), ``bots``, ``ladders``, ``matches``, ``operations`` (dead
letters, owners, gauges, the admin token), over ``parts`` (the parts every concern shares).

Layers (docs/arena.md): transport (api, web) -> service (this) -> registry / queue / ratings / scheduler /
ladder / views -> keys (Redis).  May import every layer below it; only the front ends import it.
"""

from arena.bots.owners import OwnerInfo
from arena.service.arena import Arena
from arena.service.bots import BotSource
from arena.service.ladders import InFlightMatch, LadderStatus, LadderView
from arena.service.matches import MatchSummary
from arena.service.operations import Requeued, ensure_admin_token
from arena.service.parts import Page

__all__ = [
    "Arena",
    "BotSource",
    "InFlightMatch",
    "LadderStatus",
    "LadderView",
    "MatchSummary",
    "OwnerInfo",
    "Page",
    "Requeued",
    "ensure_admin_token",
]
