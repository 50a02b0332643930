"""``Arena``: the one entry point of the service, which the gRPC API, the web pages and the tests call.

It builds the arena's parts once (``parts.Parts``) and the concerns over them, and offers each concern's
operations as its own: the bots (``bots.Bots``), the ladders (``ladders.Ladders``), the matches
(``matches.Matches``), the operator's operations (``operations.Operations``) and the pages' reads, which are
the read model's (``arena.views``).  Each operation is documented where it is defined.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import redis

from arena.bots import trust
from arena.bots.limits import Policy
from arena.service.bots import Bots
from arena.service.ladders import Ladders
from arena.service.matches import Matches
from arena.service.operations import Operations
from arena.service.parts import Parts
from arena.store.archive import Archive


class Arena:
    def __init__(
        self,
        r: redis.Redis,
        endpoint_check: Callable[[str, Sequence[str]], None] | None = None,
        own_ports: Sequence[int] = (),
        archive: Archive | None = None,  # where archived records are read (default: $ARENA_ARCHIVE_DIR)
    ) -> None:
        parts = Parts(r, archive)
        self.r = r
        self.registry = parts.registry
        self.queue = parts.queue
        self.ratings = parts.ratings
        self.scheduler = parts.scheduler
        self.views = parts.views
        # Ports of this arena's own services, never an endpoint bot's: its Redis's (and its API's, added by
        # the API server once it is bound: the bots concern holds this same list).
        redis_port = r.connection_pool.connection_kwargs.get("port")
        self.own_ports = [*own_ports, *([int(redis_port)] if redis_port else [])]
        self.bots = Bots(parts, endpoint_check or trust.check_endpoint, self.own_ports)
        self.ladders = Ladders(parts)
        self.matches = Matches(parts, self.ladders)
        self.operations = Operations(parts)
        self.batch = self.matches.batch

        # The operations, by concern.
        self.register_bot = self.bots.register_bot
        self.update_bot = self.bots.update_bot
        self.submit_bot = self.bots.submit_bot
        self.check_upload = self.bots.check_upload
        self.bot_logs = self.bots.bot_logs
        self.log_retention = self.bots.log_retention
        self.bot_status = self.bots.bot_status
        self.bot_gates = self.bots.bot_gates
        self.retire_bot = self.bots.retire_bot
        self.list_bots = self.bots.list_bots
        self.bot_states = self.registry.bot_states  # where each stands (model.bot_state): every reply shows it

        self.resolve_ladder = self.ladders.resolve_ladder
        self.start_ladder = self.ladders.start_ladder
        self.stop_ladder = self.ladders.stop_ladder
        self.extend_ladder = self.ladders.extend_ladder
        self.list_ladders = self.ladders.list_ladders
        self.ladder_status = self.ladders.ladder_status

        self.challenge = self.matches.challenge
        self.leaderboard = self.matches.leaderboard
        self.ladder_name = self.matches.ladder_name
        self.batch_ratings = self.matches.batch_ratings
        self.match_history = self.matches.match_history
        self.replay = self.matches.replay
        self.replay_view = self.matches.replay_view

        # What the web pages show: the read model's own answers.
        self.boards = self.views.boards
        self.match_page = self.views.match_page
        self.bot_page = self.views.bot_page
        self.bot_ladders = self.views.bot_ladders  # a bot's rating and statistics per ladder (BotStatus)
        self.rating_history = self.views.rating_history
        self.ping = self.views.ping
        self.is_live = self.views.is_live  # a match being played: its page follows it (arena.web.live)
        self.live_page = self.views.live_page

        self.live_workers = self.operations.live_workers
        self.queue_state = self.operations.queue_state
        self.dead_letters = self.operations.dead_letters
        self.requeue_dead_letters = self.operations.requeue_dead_letters
        self.add_owner = self.operations.add_owner
        self.list_owners = self.operations.list_owners
        self.revoke_owner = self.operations.revoke_owner
        self.publish_gauges = self.operations.publish_gauges

    @property
    def policy(self) -> Policy:
        """The operator's limits and endpoint policy (``arena.bots.limits``), as stored now."""
        return self.bots.policy
