"""The machinery of a match over open channels: ``MatchRunner`` plays a leg at a ``Table``, one decision
at a time (``step``: the seat's DecideRequest bytes -> its bot's answer over the transport -> classified
-> applied), with the handshakes and notices around it. ``referee.match.run_match`` drives it (one table,
or the two legs of a duplicate match, in turn or at once); the bench drives ``step`` directly.

What a leg changes is its table's (its streams, game, notes and ``DecisionWriter``); what the two tables
of a match share (each bot's statistics and strikes, the channels and handshakes) is the runner's,
changed under ``stats_lock``. Each process at each table has its own time bank (``MatchRunner.banks``;
the arena gives each seat its own process): a seat's deadlines tell it nothing of what its partner or the
bot's instances at the other table spend.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any

import grpc

from referee.cards import card_name, cards_in
from referee.deal import Deal
from referee.match import wire, wire_bytes
from referee.match.answers import classify_reply, died, timeout_detail
from referee.match.bots import BotProcess
from referee.match.cputime import CpuMeter, ProcessTreeCpu
from referee.match.outcome import (
    BotStats,
    DealEvent,
    Decision,
    DecisionEvent,
    Event,
    MatchSettings,
)
from referee.match.table import Forfeited, Stopped, Table, leg_seats, new_game, phase_of
from referee.match.transport import (
    Answer,
    BotLink,
    BotLinks,
    MatchCancelled,
    SeatStream,
    close_streams,
    notice_message,
    unary_decide,
)
from referee.record import ActionNote
from referee.rules import get_ruleset

__all__ = ["MatchRunner"]

REFEREE_NAME = "pilotta-referee/0.1"
# Outcomes after which the referee no longer knows a bot's state: its next match shakes hands again.
_UNKNOWN_AFTER = ("timeout", "crashed", "unreachable")


class MatchRunner:
    """The machinery of ``run_match`` over open channels (the bench drives ``step`` directly)."""

    def __init__(
        self,
        endpoints: Sequence[str],
        labels: Sequence[str],
        settings: MatchSettings,
        match_id: str,
        on_event: Callable[[Event], None] | None,
        cancel: threading.Event | None,
        links: BotLinks | None = None,
        procs: Sequence[BotProcess] = (),
        seat_endpoints: Sequence[Sequence[str]] | None = None,
        cpu_meters: Mapping[str, CpuMeter] | None = None,
    ) -> None:
        self.s = settings
        self.match_id = match_id
        self.on_event = on_event
        self.cancel = cancel
        seats4 = list(endpoints) * 2 if len(endpoints) == 2 else list(endpoints)
        labels4 = list(labels) * 2 if len(labels) == 2 else list(labels)
        self.bots: list[BotStats] = []
        self.first_seats: list[int] = []
        keys: dict[tuple[str, int], int] = {}
        for seat, (ep, label) in enumerate(zip(seats4, labels4, strict=True)):
            key = (ep, seat & 1)
            if key not in keys:
                keys[key] = len(self.bots)
                name = label if all(b.name != label for b in self.bots) else f"{label}#{len(self.bots) + 1}"
                self.bots.append(BotStats(name, ep, seat & 1, time_bank_ms=float(settings.time_bank_ms)))
            self.first_seats.append(keys[key])
        # Channels: the caller's (kept between matches) or this match's own.
        self.own_links = links is None or links.max_message_bytes != settings.max_message_bytes
        self.link_pool = (
            links
            if links is not None and not self.own_links
            else BotLinks(settings.max_message_bytes, links.versions if links is not None else wire.PROTOCOL_VERSIONS)
        )
        # One instance per seat: per leg, the endpoint of the process playing each seat (see run_match).
        self.seat_endpoints = [list(eps) for eps in seat_endpoints] if seat_endpoints else None
        every = seats4 + [ep for eps in self.seat_endpoints or () for ep in eps]
        self.links: dict[str, BotLink] = {ep: self.link_pool.get(ep) for ep in dict.fromkeys(every)}
        self.versions: dict[str, int] = {}  # the protocol version of each endpoint, from its handshake
        self.tables: list[Table] = []  # every leg's table set up so far (``table``), closed with the match
        self.ended = False  # a team forfeited: the match is over (set with the decision that made it so)
        # The bots' statistics (a bot's instances at both tables add to one BotStats: counts, strikes, time
        # bank) are updated under ``stats_lock``; ``on_event`` is called under ``event_lock``, never from two
        # threads at once.
        self.stats_lock = threading.Lock()
        self.event_lock = threading.Lock()
        # The time bank of each process at each table (leg, endpoint): one bank per instance (the arena
        # gives each seat its own), never one per bot and match. A seat's deadlines carry what is left of
        # its bank: shared with its partner (another instance of the same bot, whose hand it must not see)
        # or with the bot's instances at the other table of a duplicate pair (which hold the same boards at
        # the same time), what one spent would be read by the other, a few bits a decision. One process
        # given both seats of a side keeps one bank for them (it sees both hands anyway).
        # BotStats.time_bank_ms is the least left at any of the bot's banks.
        self.banks: dict[tuple[int, str], float] = {}
        self.ruleset = get_ruleset(settings.ruleset, dict(settings.options))
        self.boards = settings.match_boards()
        self.cpu_given: Mapping[str, CpuMeter] = cpu_meters or {}  # the caller's, by endpoint (not closed here)
        # The CPU time of the bots the match was given the processes of and no meter for (by endpoint).
        self.cpu = {
            p.endpoint: ProcessTreeCpu(p.process.pid)
            for p in procs
            if p.error is None and p.endpoint not in self.cpu_given
        }
        self.procs = {p.endpoint: p for p in procs}  # the bots this match started, to say how one died

    def table(self, leg: int) -> Table:
        """A new table for ``leg``: its seating and the process playing each seat."""
        seats = leg_seats(self.first_seats, leg)
        if self.seat_endpoints is not None:
            eps = self.seat_endpoints[leg]
            endpoints = (eps[0], eps[1], eps[2], eps[3])
        else:
            endpoints = (
                self.bots[seats[0]].endpoint,
                self.bots[seats[1]].endpoint,
                self.bots[seats[2]].endpoint,
                self.bots[seats[3]].endpoint,
            )
        table = Table(leg, seats, endpoints, wire_bytes.DecisionWriter(self.match_id))
        self.tables.append(table)
        return table

    def legs_apart(self) -> bool:
        """Whether no process plays at both tables of a duplicate match (``seat_endpoints`` whose legs share
        no endpoint): only then may its legs be played at once."""
        eps = self.seat_endpoints
        return self.s.duplicate and eps is not None and len(eps) == 2 and not set(eps[0]) & set(eps[1])

    def bots_at(self, endpoint: str) -> list[int]:
        """The bots (indices) a process at ``endpoint`` plays for, in any seat of any leg."""
        found = {i for i, b in enumerate(self.bots) if b.endpoint == endpoint}
        for leg, eps in enumerate(self.seat_endpoints or ()):
            seats = leg_seats(self.first_seats, leg)
            found |= {seats[x] for x, ep in enumerate(eps) if ep == endpoint}
        return sorted(found)

    def _unique(self, name: str) -> str:
        taken = {b.name for b in self.bots}
        if name not in taken:
            return name
        n = 2
        while f"{name}#{n}" in taken:
            n += 1
        return f"{name}#{n}"

    def close(self) -> None:
        # A channel of this match's own is closed next: wait until the bots have ended their streams (they
        # read the MatchEnd first). Kept channels stay open: the bots end their streams meanwhile.
        self.close_streams(wait=self.own_links)
        for ep, link in self.links.items():
            bots = [self.bots[i] for i in self.bots_at(ep)]
            link.known = link.handshake is not None and not any(
                b.counts[o] or b.notice_failures for b in bots for o in _UNKNOWN_AFTER
            )
        if self.own_links:
            self.link_pool.close()
        for meter in self.cpu.values():
            meter.close()

    def close_streams(self, tables: Sequence[Table] | None = None, *, wait: bool = False) -> None:
        """End the streams of ``tables`` (all by default)."""
        streams: list[SeatStream] = []
        for t in self.tables if tables is None else tables:
            streams += t.streams.values()
            t.streams = {}
        close_streams(streams, self.s.notice_deadline_ms / 1000, wait=wait)

    def version_of(self, bot: int) -> int:
        """The protocol version of the process ``bot`` is known by (its first seat in leg 1)."""
        return self.versions.get(self.bots[bot].endpoint, 1)

    def emit(self, event: Event) -> None:
        if self.on_event is not None:
            with self.event_lock:
                self.on_event(event)

    # --- Handshake and notices ------------------------------------------------------------------------
    def handshake(self) -> list[tuple[int, str]]:
        """Handshake every distinct endpoint; return (bot, reason) for each unreachable bot."""
        failed: list[tuple[int, str]] = []
        down: set[int] = set()  # bots one of whose processes failed its handshake
        request = wire.handshake_request(REFEREE_NAME, self.link_pool.versions)
        futures = {
            ep: link.stub.Handshake.future(request, timeout=self.s.handshake_deadline_ms / 1000)
            for ep, link in self.links.items()
            if not (link.known and link.handshake is not None)  # a warm bot's last handshake still holds
        }
        for ep, link in self.links.items():
            info: dict[str, Any] | None = link.handshake
            why = ""
            fut = futures.get(ep)
            if fut is not None:
                try:
                    info = wire.handshake_info(fut.result())
                except grpc.RpcError as e:
                    info, why = None, f"{e.code().name}: {e.details()}"
                if info is not None and info["protocol_version"] not in self.link_pool.versions:
                    spoken = " and ".join(map(str, self.link_pool.versions))
                    why = f"it speaks protocol version {info['protocol_version']}; this referee speaks {spoken}"
                    info = None
                link.handshake = info
            if info is not None:
                self.versions[ep] = int(info["protocol_version"])
            for i in self.bots_at(ep):
                b = self.bots[i]
                if info is None:
                    b.handshake = None
                    if i not in down:
                        down.add(i)
                        b.down = b.down or "unreachable"
                        b.counts["unreachable"] += 1
                        proc = self.procs.get(ep)
                        if proc is not None and proc.error:  # it never came up: say why, not how the call failed
                            failed.append((i, proc.error))
                        else:
                            b.note(f"handshake failed: {why}")
                            failed.append((i, f"bot {b.name} is unreachable at {ep} ({why})"))
                    continue
                if i in down:
                    continue
                b.handshake = info
                if b.name.split("#")[0] == ep:  # named by its address: its own name reads better
                    b.name = self._unique(str(info["name"]) or ep)
                if self.s.ruleset not in info["games"]:
                    why = f"its handshake does not list ruleset {self.s.ruleset!r} (it lists {info['games']})"
                    b.note(why)
                    if self.s.require_listed:
                        down.add(i)
                        b.down = "ruleset not listed"
                        failed.append((i, f"bot {b.name} refused: {why}"))
        return failed

    def notify(self, t: Table, rpc: str, messages: Sequence[Any], seats: Sequence[int] | None = None) -> None:
        """Send one notice per seat of table ``t`` (``seats``: their numbers, all four by default), failures
        only counted.

        Version 1: calls in parallel, each with a short deadline. Version 2: a message on the seat's stream,
        waited for by nobody; MatchStarted opens the table's streams with it.
        """
        pending: list[tuple[int, Future[Any]]] = []
        # (``seats`` may be empty: no bot to tell, when none answered its handshake.)
        for msg, seat in zip(messages, range(4) if seats is None else seats, strict=True):
            bot = t.seats[seat]
            with self.stats_lock:
                self.bots[bot].notices_sent += 1
            endpoint = t.endpoints[seat]
            link = self.links[endpoint]
            if self.versions.get(endpoint, 1) == 1:
                call = getattr(link.stub, rpc)
                pending.append((bot, call.future(msg, timeout=self.s.notice_deadline_ms / 1000)))
                continue
            stream = t.streams.get(seat)
            if stream is None:  # the stream opens with the leg's MatchStart (or, before any leg, MatchEnd)
                t.streams[seat] = SeatStream(link, notice_message(rpc, msg))
            elif not stream.notice(notice_message(rpc, msg)):
                self._notice_failed(bot, rpc, "its stream is broken")
        for bot, fut in pending:
            try:
                fut.result()
            except grpc.RpcError as e:
                self._notice_failed(bot, rpc, e.code().name)

    def _notice_failed(self, bot: int, rpc: str, why: str) -> None:
        with self.stats_lock:
            self.bots[bot].notice_failures += 1
            by_kind = self.bots[bot].notice_failures_by_kind
            by_kind[rpc] = by_kind.get(rpc, 0) + 1
            self.bots[bot].note(f"{rpc} notice failed: {why}")

    # --- Decisions ------------------------------------------------------------------------------------
    def ask(self, t: Table, seat: int, request: bytes) -> Answer:
        """The answer of the process at ``seat`` of table ``t`` to one decision, over its protocol version's
        transport."""
        timeout = (self.s.deadline_ms + self.bank(t, seat)) / 1000
        stream = t.streams.get(seat)
        if stream is not None:
            return stream.decide(request, timeout, self.s.deadline_ms / 2, self.cancel)
        link = self.links[t.endpoints[seat]]
        return unary_decide(link, request, timeout, self.s.deadline_ms / 2, self.cancel)

    def bank(self, t: Table, seat: int) -> float:
        """What is left of the time bank of the process at ``seat`` of table ``t`` (its own at that table)."""
        return self.banks.get((t.leg, t.endpoints[seat]), float(self.s.time_bank_ms))

    def _spend(self, t: Table, seat: int, ms: float) -> None:
        """Take ``ms`` from the bank of the process at ``seat`` of table ``t`` (only its table's thread does)."""
        key = (t.leg, t.endpoints[seat])
        with self.stats_lock:  # (BotStats is the two tables')
            left = self.banks[key] = max(0.0, self.banks.get(key, float(self.s.time_bank_ms)) - ms)
            b = self.bots[t.seats[seat]]
            b.time_bank_ms = min(b.time_bank_ms, left)

    def decide(
        self, t: Table, seat: int, request: bytes, legal: Sequence[str], decl_codes: tuple[str, ...]
    ) -> Decision:
        """Ask the bot at ``seat`` of table ``t`` (``request``: a DecideRequest's bytes) and classify its
        answer; the CPU time of a bot this match started is read around the call."""
        ep = t.endpoints[seat]
        meter = self.cpu.get(ep) or self.cpu_given.get(ep)
        cpu_start = meter.start() if meter is not None else None
        bank = self.bank(t, seat)
        reply, latency, outcome, detail = self.ask(t, seat, request)
        cpu_ms = meter.since(cpu_start) if meter is not None else None
        over = latency - self.s.deadline_ms
        if over > 0:
            self._spend(t, seat, over)
        if reply is None:
            if outcome == "timeout":
                self._spend(t, seat, bank)
                detail = timeout_detail(self.s.deadline_ms, bank)
            elif outcome in ("crashed", "unreachable"):
                detail = died(self.procs.get(ep), detail)
            return Decision(0, outcome, latency, detail, "", None, cpu_ms)
        return classify_reply(reply, legal, decl_codes, latency, cpu_ms)

    # --- A leg ----------------------------------------------------------------------------------------
    def play_leg(self, t: Table) -> None:
        """Play table ``t``'s game. Raises Forfeited when a team forfeits, Stopped when ``t.stop`` was set
        (the other table's forfeit), MatchCancelled when the match was cancelled."""
        s = self.s
        t.game = game = new_game(s, self.ruleset, self.boards)
        names = [self.bots[b].name for b in t.seats]
        self.notify(
            t,
            "MatchStarted",
            [
                wire.match_start_notice(
                    self.match_id,
                    s.ruleset,
                    self.ruleset.options_json(),  # every option, defaults included
                    seat,
                    names,
                    deadline_ms=s.deadline_ms,
                    time_bank_ms=s.time_bank_ms,
                    ruleset_version=self.ruleset.version,
                )
                for seat in range(4)
            ],
        )
        while not game.over:
            if self.cancel is not None and self.cancel.is_set():
                raise MatchCancelled()
            if t.stop.is_set():
                raise Stopped()
            ended = self.step(t)
            if ended is not None:
                deal_number, deal = ended
                assert deal.score is not None
                self.emit(DealEvent(t.leg, deal_number, tuple(deal.score.written), tuple(game.scores), deal.thrown_in))
                notice = wire.deal_end_notice(deal, self.match_id, deal_number, game.scores)
                self.notify(t, "DealEnded", [notice] * 4)

    def step(self, t: Table) -> tuple[int, Deal] | None:
        """One decision at table ``t``: the seat's DecideRequest bytes -> Decide -> parse -> apply. Returns
        (number, deal) when the deal ended with it. Raises Forfeited when the bot's team forfeits."""
        s = self.s
        game = t.game
        assert game is not None
        deal = game.deal
        deal_number = len(game.deals) - 1
        seat = deal.to_act
        bot_index = t.seats[seat]
        b = self.bots[bot_index]
        actions = deal.legal_actions()
        legal, request = t.writer.request(
            deal, seat, game, actions, deadline_ms=s.deadline_ms, time_bank_ms=int(self.bank(t, seat))
        )
        decision = self.decide(t, seat, request, legal, deal.declaration_codes[seat])
        index, outcome, latency, detail, comment = decision[:5]
        with self.stats_lock:
            if self.ended:  # the match ended at the other table while this decision was asked: not the match's
                raise Stopped()
            b.counts[outcome] += 1
            b.latencies_ms.append(latency)
            if outcome != "ok" and outcome not in ("crashed", "unreachable"):
                b.strikes += 1
            strikes = b.strikes
            # The first forfeit ends the match: no decision at the other table counts after it (both tables
            # of a bot that times out everywhere count its strikes up to the limit, never one beyond).
            self.ended = outcome in ("crashed", "unreachable") or strikes > s.max_strikes
        t.notes[(deal_number, len(deal.history))] = ActionNote(
            latency, decision.cpu_ms, outcome, decision.answer, detail or None, comment or None
        )
        if self.on_event is not None:
            phase = phase_of(deal.phase.value, actions[index])
            if outcome == "ok":
                event = DecisionEvent(
                    t.leg,
                    deal_number,
                    seat,
                    b.name,
                    phase,
                    legal[index],
                    outcome,
                    latency,
                    bank_left_ms=self.bank(t, seat),
                )
            else:  # the whole decision, for the bot's author
                event = DecisionEvent(
                    t.leg,
                    deal_number,
                    seat,
                    b.name,
                    phase,
                    legal[index],
                    outcome,
                    latency,
                    detail,
                    deal.trick_number + 1 if phase == "play" else 0,
                    tuple(card_name(c) for c in cards_in(deal.hands[seat])),
                    tuple(legal),
                    decision.answer,
                    self.bank(t, seat),
                )
            self.emit(event)
        if outcome in ("crashed", "unreachable"):
            with self.stats_lock:
                b.note(f"leg {t.leg + 1} deal {deal_number + 1} seat {seat}: {detail}")  # counted from 1, as shown
            raise Forfeited(bot_index, seat, f"bot {b.name} (seat {seat}) {outcome}: {detail}")
        if outcome != "ok":
            with self.stats_lock:
                b.note(f"leg {t.leg + 1} deal {deal_number + 1} seat {seat}: {outcome}: {detail}")
            if strikes > s.max_strikes:
                raise Forfeited(
                    bot_index, seat, f"bot {b.name} exceeded {s.max_strikes} strikes (last: {outcome}: {detail})"
                )
        game.apply(actions[index])
        return (deal_number, deal) if deal.is_over else None
