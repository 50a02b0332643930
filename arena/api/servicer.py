"""The ``Arena`` gRPC service (proto/pilotta/arena/v1/arena.proto): a thin transport over ``arena.service``.

Each handler turns its request into a call of ``service.Arena`` and the answer into a reply (``messages``);
what the arena does, and every Redis key, lives below (docs/arena.md has the map of the layers).  Its
exceptions become status codes (``errors.rpc``).
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Iterator
from typing import Any, Protocol

import grpc
import redis
from pilotta.arena.v1 import arena_pb2, arena_pb2_grpc

from arena.api.errors import Context, rpc, status_of
from arena.api.guard import BoundedStream, StreamLimits, UploadSlots, client_address
from arena.api.messages import (
    bot_info,
    bot_source,
    forfeit_limits,
    gate_config,
    gate_status,
    ladder_info,
    match_summary,
    one_of,
    owner_info,
)
from arena.bots.packages import MAX_PACKAGE_BYTES, PackageError
from arena.model import Bot, ValidationError
from arena.rating.batch import DEFAULT_ANCHOR
from arena.rating.bradley_terry import PROVISIONAL_BOARDS, PROVISIONAL_WIDTH_ELO
from arena.service import Arena, Page
from arena.store.archive import Archive

log = logging.getLogger(__name__)


class UploadContext(Context, Protocol):
    """What ``SubmitBot`` uses of its ``grpc.ServicerContext``: abort, and who is calling."""

    def peer(self) -> str: ...


class PeerContext(Context, Protocol):
    """What ``Challenge`` uses of its ``grpc.ServicerContext``: abort, and who is calling."""

    def peer(self) -> str: ...


class ArenaService(arena_pb2_grpc.ArenaServicer):
    def __init__(self, r: redis.Redis, archive: Archive | None = None, limits: StreamLimits | None = None) -> None:
        self.arena = Arena(r, archive=archive)
        self.limits = limits or StreamLimits()
        self.uploads = UploadSlots(self.limits.uploads, self.limits.uploads_per_client)

    # bots ------------------------------------------------------------------------------

    @rpc
    def RegisterBot(self, request: arena_pb2.RegisterBotRequest) -> arena_pb2.RegisterBotReply:
        source = bot_source(request.source, request.games, request.rulesets)
        bot, token = self.arena.register_bot(request.name, request.owner, source, token=request.token)
        return arena_pb2.RegisterBotReply(bot=self._bot_info(bot), owner_token=token)

    @rpc
    def UpdateBot(self, request: arena_pb2.UpdateBotRequest) -> arena_pb2.BotInfo:
        source = bot_source(request.source, request.games, request.rulesets)
        return self._bot_info(self.arena.update_bot(request.name, request.token, source))

    @rpc
    def RetireBot(self, request: arena_pb2.RetireBotRequest) -> arena_pb2.BotInfo:
        return self._bot_info(self.arena.retire_bot(request.name, request.token))

    @rpc
    def ListBots(self, request: arena_pb2.ListBotsRequest) -> arena_pb2.ListBotsReply:
        bots, token = self.arena.list_bots(request.include_retired, Page(request.page_token, request.limit))
        states = self.arena.bot_states(bots)
        return arena_pb2.ListBotsReply(
            bots=[bot_info(b, states[b.bot_id], full=False) for b in bots], next_page_token=token
        )

    def _bot_info(self, bot: Bot) -> arena_pb2.BotInfo:
        """A bot as a reply to its owner shows it, with where it stands (the lists' words)."""
        return bot_info(bot, self.arena.bot_states([bot])[bot.bot_id])

    # ladders ---------------------------------------------------------------------------

    @rpc
    def Leaderboard(self, request: arena_pb2.LeaderboardRequest) -> arena_pb2.LeaderboardReply:
        ladder, standings, token = self.arena.leaderboard(request.ladder, Page(request.page_token, request.limit))
        return arena_pb2.LeaderboardReply(
            ladder=ladder,
            ladder_name=self.arena.ladder_name(ladder),
            next_page_token=token,
            entries=[
                arena_pb2.LeaderboardEntry(
                    rank=s.rank,
                    bot=s.name,
                    mu=s.rating.mu,
                    sigma=s.rating.sigma,
                    conservative=s.rating.conservative,
                    games=s.rating.games,
                    wins=s.rating.wins,
                    losses=s.rating.losses,
                    draws=s.rating.draws,
                    stats_json=json.dumps(s.stats.to_dict(), sort_keys=True),
                    version=s.version,
                    gating=s.gating,
                    endpoint=s.endpoint,
                    state=s.state,
                    state_reason=s.reason,
                )
                for s in standings
            ],
        )

    @rpc
    def BatchRatings(self, request: arena_pb2.BatchRatingsRequest) -> arena_pb2.BatchRatingsReply:
        table = self.arena.batch_ratings(request.ladder, request.anchor or DEFAULT_ANCHOR)
        return arena_pb2.BatchRatingsReply(
            ladder=table["ladder"],
            ladder_name=self.arena.ladder_name(table["ladder"]),
            anchor=table["anchor"],
            boards=table["boards"],
            ratings=[arena_pb2.BatchRating(**row) for row in table["ratings"]],
            head_to_head=[arena_pb2.HeadToHead(**row) for row in table["head_to_head"]],
            provisional_width_elo=PROVISIONAL_WIDTH_ELO,
            provisional_boards=PROVISIONAL_BOARDS,
        )

    @rpc
    def MatchHistory(self, request: arena_pb2.MatchHistoryRequest) -> arena_pb2.MatchHistoryReply:
        found, token = self.arena.match_history(request.ladder, request.bot, request.limit, request.page_token)
        return arena_pb2.MatchHistoryReply(matches=[match_summary(m) for m in found], next_page_token=token)

    @rpc
    def GetReplay(self, request: arena_pb2.GetReplayRequest) -> arena_pb2.GetReplayReply:
        match, record = self.arena.replay(request.match_id)
        return arena_pb2.GetReplayReply(match=match_summary(match), record_json=record)

    def Challenge(self, request: arena_pb2.ChallengeRequest, context: PeerContext) -> arena_pb2.ChallengeReply:
        # (Not @rpc: challenges are rate-limited per client too, so this handler reads who is calling.)
        try:
            spec = self.arena.challenge(
                list(request.bots),
                request.token,
                request.ladder,
                request.seed,
                request.rated,
                list(request.tokens),
                client=client_address(context.peer()),
            )
        except Exception as e:
            code, text = status_of(e)
            if code == grpc.StatusCode.INTERNAL:
                log.exception("Challenge failed")
            context.abort(code, text)
            raise  # unreachable: abort raises
        return arena_pb2.ChallengeReply(match_id=spec.match_id, rated=spec.rated)

    @rpc
    def LadderStatus(self, request: arena_pb2.LadderStatusRequest) -> arena_pb2.LadderStatusReply:
        s = self.arena.ladder_status(request.ladder)
        return arena_pb2.LadderStatusReply(
            ladder=s.ladder_id,
            ruleset=s.ruleset,
            game=s.ruleset,
            queued=s.queue.waiting - s.queue.claimed,
            pending=s.queue.claimed,
            completed=s.completed,
            dead_lettered=s.dead_lettered,
            oldest_pending_age_seconds=s.queue.oldest_age_s,
            workers_alive=list(s.workers_alive),
            name=s.name,
            is_default=s.is_default,
            started=s.run is not None,
            max_in_flight=s.run.max_in_flight if s.run is not None else 0,
            matches_per_minute=s.matches_per_minute,
            eta_seconds=s.eta_s,
            remaining=s.remaining,
            holding=list(s.holding),
            held_by_pairs=s.held_by_pairs,
            idle_by_pairs=list(s.idle_by_pairs),
            gating=[gate_status(g) for g in s.gating],
            in_flight=[
                arena_pb2.InFlightMatch(
                    match_id=m.match_id, bots=list(m.bots), age_seconds=m.age_s, playing=bool(m.worker), worker=m.worker
                )
                for m in s.in_flight
            ],
        )

    @rpc
    def StartLadder(self, request: arena_pb2.StartLadderRequest) -> arena_pb2.LadderInfo:
        view = self.arena.start_ladder(
            request.token,
            ruleset=one_of(request.ruleset, request.variant, "ruleset"),
            options_json=request.options_json,
            deals=request.deals or None,
            target=request.target or None,
            duplicate=not request.single,
            matches=request.matches if request.HasField("matches") else None,
            max_in_flight=request.max_in_flight or None,
            endpoint_bots=request.endpoint_bots,
            name=request.name,
            make_default=request.make_default,
            gating=gate_config(request.gating) if request.HasField("gating") else None,
            forfeit_limits=forfeit_limits(request.forfeit_limits) if request.HasField("forfeit_limits") else None,
        )
        return ladder_info(view)

    @rpc
    def StopLadder(self, request: arena_pb2.StopLadderRequest) -> arena_pb2.LadderInfo:
        return ladder_info(self.arena.stop_ladder(request.token, request.ladder))

    @rpc
    def ExtendLadder(self, request: arena_pb2.ExtendLadderRequest) -> arena_pb2.LadderInfo:
        return ladder_info(self.arena.extend_ladder(request.token, request.ladder, request.matches))

    @rpc
    def ListLadders(self, request: arena_pb2.ListLaddersRequest) -> arena_pb2.ListLaddersReply:
        return arena_pb2.ListLaddersReply(ladders=[ladder_info(v) for v in self.arena.list_ladders()])

    # dead letters ---------------------------------------------------------------------------

    @rpc
    def ListDeadLetters(self, request: arena_pb2.ListDeadLettersRequest) -> arena_pb2.ListDeadLettersReply:
        found, total = self.arena.dead_letters(request.token, request.limit)
        return arena_pb2.ListDeadLettersReply(
            dead_letters=[
                arena_pb2.DeadLetterInfo(
                    dead_id=d.dead_id,
                    match_id=d.match_id,
                    ladder=d.ladder or "",
                    reason=d.reason,
                    deliveries=d.deliveries,
                    worker=d.worker,
                    dead_lettered_at=d.ts,
                )
                for d in found
            ],
            total=total,
        )

    @rpc
    def RequeueDeadLetters(self, request: arena_pb2.RequeueDeadLettersRequest) -> arena_pb2.RequeueDeadLettersReply:
        done = self.arena.requeue_dead_letters(request.token, list(request.dead_ids), every=request.all)
        return arena_pb2.RequeueDeadLettersReply(
            matches=[
                arena_pb2.RequeuedMatch(dead_id=d.dead_id, match_id=d.match_id, requeued=d.requeued, reason=d.reason)
                for d in done
            ]
        )

    # owners ----------------------------------------------------------------------------------

    @rpc
    def AddOwner(self, request: arena_pb2.AddOwnerRequest) -> arena_pb2.AddOwnerReply:
        info, token = self.arena.add_owner(request.token, request.name)
        return arena_pb2.AddOwnerReply(owner=owner_info(info), owner_token=token)

    @rpc
    def ListOwners(self, request: arena_pb2.ListOwnersRequest) -> arena_pb2.ListOwnersReply:
        return arena_pb2.ListOwnersReply(owners=[owner_info(o) for o in self.arena.list_owners(request.token)])

    @rpc
    def RevokeOwner(self, request: arena_pb2.RevokeOwnerRequest) -> arena_pb2.OwnerInfo:
        return owner_info(self.arena.revoke_owner(request.token, request.name))

    # uploads ---------------------------------------------------------------------------------

    def SubmitBot(self, request_iterator: Iterator[arena_pb2.SubmitBotChunk], context: UploadContext) -> Any:
        """An upload takes one of the few upload slots (RESOURCE_EXHAUSTED at once without one), and its chunks
        are read within the bounds of ``StreamLimits`` (``arena.api.guard``: DEADLINE_EXCEEDED past them).
        Its first chunk, which names the bot and carries the key or token, is checked before any other is
        read; then the chunks are read counting bytes, so a package past the cap is refused before it is all
        sent (INVALID_ARGUMENT naming the cap)."""
        try:
            with (
                self.uploads.slot(client_address(context.peer())),
                BoundedStream(request_iterator, self.limits, _chunk_bytes) as chunks,
            ):
                return self._submit(chunks)
        except Exception as e:
            code, text = status_of(e)
            if code == grpc.StatusCode.INTERNAL:
                log.exception("SubmitBot failed")
            context.abort(code, text)
            raise

    def _submit(self, chunks: Iterator[arena_pb2.SubmitBotChunk]) -> arena_pb2.SubmitBotReply:
        first = next(chunks, None)
        if first is None:
            raise ValidationError("an upload needs at least one chunk naming the bot")
        # The upload's metadata, checked before another byte is read: no key or token, no upload.
        self.arena.check_upload(first.name, first.owner, first.token)
        parts: list[bytes] = []
        size = 0
        for chunk in itertools.chain([first], chunks):
            size += len(chunk.data)
            if size > MAX_PACKAGE_BYTES:
                raise PackageError(
                    f"package is larger than {MAX_PACKAGE_BYTES >> 20} MB (the cap); vendor less, or leave "
                    "out what the bot does not need at run time"
                )
            parts.append(chunk.data)
        bot, token, version = self.arena.submit_bot(first.name, first.owner, b"".join(parts), first.token)
        digest = next(v.package for v in self.arena.registry.versions(bot.bot_id) if v.version == version)
        return arena_pb2.SubmitBotReply(
            bot=self._bot_info(bot), owner_token=token, version=version, digest=digest or ""
        )

    @rpc
    def BotLogs(self, request: arena_pb2.BotLogsRequest) -> arena_pb2.BotLogsReply:
        found = self.arena.bot_logs(request.name, request.token, request.match_id)
        return arena_pb2.BotLogsReply(
            logs=[
                arena_pb2.MatchLog(match_id=x.match_id, version=x.version, finished_at=x.ts, text=x.text) for x in found
            ],
            retention=self.arena.log_retention().describe(),
        )

    @rpc
    def BotStatus(self, request: arena_pb2.BotStatusRequest) -> arena_pb2.BotStatusReply:
        bot, versions = self.arena.bot_status(request.name, request.token)
        gates = self.arena.bot_gates(bot)
        where = self.arena.bot_states([bot])[bot.bot_id]
        # The owner's view of each version: its statistics on each ladder; and the bot's rating there.
        ladders = self.arena.bot_ladders(bot.bot_id, bot.version)
        by_version: dict[int, dict[str, Any]] = {}
        for lad in ladders:
            for st in lad.versions:
                by_version.setdefault(st.version or 0, {})[lad.ladder] = st.to_dict()
        ratings = {
            lad.ladder: {"rank": lad.rank, "mu": lad.rating.mu, "sigma": lad.rating.sigma, "games": lad.rating.games}
            | {"conservative": lad.rating.conservative}
            for lad in ladders
        }
        return arena_pb2.BotStatusReply(
            name=bot.name,
            state=where.state,
            state_reason=where.reason,
            ratings_json=json.dumps(ratings, sort_keys=True),
            versions=[
                arena_pb2.VersionStatus(
                    version=v.version,
                    kind=v.kind,
                    state=st.state if st else "",
                    reason=st.reason if st else "",
                    output=st.output if st else "",
                    digest=v.package or "",
                    created_at=v.created,
                    current=v.version == bot.version,
                    gates=[gate_status(g) for g in gates.get(v.version, [])],
                    stats_json=json.dumps(by_version.get(v.version, {}), sort_keys=True),
                )
                for v, st in versions
            ],
        )


def _chunk_bytes(chunk: arena_pb2.SubmitBotChunk) -> int:
    return int(chunk.ByteSize())
