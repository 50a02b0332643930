"""Conformance: does a bot follow the protocol, for every game it plays? (``arena check-bot`` prints these
checks; ``arena.bots.validation`` runs them on every uploaded version, in the sandbox.)

The bot is seated as its own partner (seats 0 and 2) against a sample opponent (seats 1 and 3, by default
``sample_bots/heuristic``, which bids), so that even a bot that always passes is asked to play cards.
Checked: that it starts and serves its health service (where it serves one); its handshake (name, games
and protocol version, against its manifest's when it has one); legal answers in every phase of every game
it lists, within the deadline, without answering an error; its notices; that it speaks version 1 to a
version 1 referee; and that it stops cleanly on SIGTERM within the grace period (exit status 0). Every FAIL
about decisions shows the first failing decision in full (game, deal, trick, the bot's hand and legal
actions, what it answered or the error it answered, its log). What is cosmetic is a WARN, not a FAIL: a
handshake name other than the manifest's, games only the handshake lists, a bot ended by SIGTERM itself.
The report and its words are ``arena.bots.check_report``'s.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from pilotta.arena.v1 import bot_pb2_grpc

from arena.bots.check_report import CheckReport, Failed, failure_text
from referee.errors import RulesetError
from referee.match import DecisionEvent, Event, MatchOutcome, MatchSettings, run_match, wire
from referee.match.bots import REPO_ROOT, BotProcess, Manifest, launch_bots, resolve_bot
from referee.match.transport import BotLinks
from referee.rules import get_ruleset

BOT_SERVICE = "pilotta.arena.v1.Bot"
DEFAULT_OPPONENT = REPO_ROOT / "sample_bots" / "heuristic"


@dataclass(frozen=True)
class CheckSettings:
    """What a check plays: its games (None: every game the handshake lists), played deals per game, the first
    game's seed, the opponent, the SIGTERM grace, the limits of each decision, where started bots log."""

    games: tuple[str, ...] | None = None
    deals: int = 4
    seed: int = 1
    opponent: str = str(DEFAULT_OPPONENT)
    grace_s: float = 3.0
    deadline_ms: int = 1000
    time_bank_ms: int = 10_000
    logs: str | None = None

    def match(self, game: str, attempt: int) -> MatchSettings:
        # Every answer is checked, so no side forfeits for strikes: a bad answer is counted, not punished.
        return MatchSettings(
            ruleset=game,
            seed=self.seed + attempt,
            deals=self.deals,
            max_total_deals=4 * self.deals,
            deadline_ms=self.deadline_ms,
            time_bank_ms=self.time_bank_ms,
            max_strikes=1000,
            log_dir=self.logs,
        )


@dataclass
class Target:
    """The bot under check: its endpoint, its manifest and process when check-bot started it."""

    endpoint: str
    manifest: Manifest | None = None
    process: BotProcess | None = None
    # Why SIGTERM is not checked when there is no process of check-bot's to signal.
    unsignalled: str = "not checked: check-bot did not start this bot (give its directory to check it)"

    @property
    def log(self) -> str:
        if self.process is not None:
            return str(self.process.stderr_path)
        return "not started by check-bot (see where your bot writes its own)"


def check_health(target: Target, report: CheckReport) -> None:
    """The standard health service, where the bot serves one: SERVING for the server and the Bot service."""
    with grpc.insecure_channel(target.endpoint) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        states = []
        for service in ("", BOT_SERVICE):
            try:
                reply = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5.0)
                states.append(health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status))
            except grpc.RpcError as e:
                states.append(e.code().name)
    if states[0] == "UNIMPLEMENTED":
        report.skip("health service", "none served (optional: the arena then probes the bot with a Handshake)")
        return
    report.add(
        "health service says SERVING",
        states[0] == "SERVING" and states[1] in ("SERVING", "NOT_FOUND"),
        f"server: {states[0]}, {BOT_SERVICE}: {states[1]}",
    )


def check_handshake(target: Target, report: CheckReport) -> tuple[list[str], int]:
    """The rulesets the bot lists and the protocol version it chose (0 when the handshake failed)."""
    with grpc.insecure_channel(target.endpoint) as channel:
        stub = bot_pb2_grpc.BotStub(channel)
        try:
            reply = stub.Handshake(wire.handshake_request("arena check-bot"), timeout=5.0)
            # A referee that speaks only version 1 must get version 1 (or the bot cannot play it).
            old = stub.Handshake(wire.handshake_request("arena check-bot", (1,)), timeout=5.0)
        except grpc.RpcError as e:
            report.add("handshake", False, f"{e.code().name}: {e.details()}")
            return [], 0
    report.add("handshake answers", True, f"{reply.name} {reply.version} by {reply.author or '?'}")
    report.add("handshake names the bot", bool(reply.name.strip()), "" if reply.name else "empty name")
    version = wire.reply_protocol_version(reply)
    spoken = " and ".join(map(str, wire.PROTOCOL_VERSIONS))
    report.add("protocol version", version in wire.PROTOCOL_VERSIONS, f"speaks {version}, the referee speaks {spoken}")
    old_version = wire.reply_protocol_version(old)
    report.add(
        "protocol version offered version 1 alone",
        old_version == 1 or version == 1,
        f"answers {old_version}" + ("" if old_version == 1 else ": a version 1 referee cannot play it"),
    )
    rulesets = wire.handshake_rulesets(reply)
    report.add("handshake lists games", bool(rulesets), ", ".join(rulesets) or "no games listed")
    m = target.manifest
    if m is not None:
        name = "handshake name matches the manifest"
        if reply.name == m.name:
            report.add(name, True, repr(m.name))
        else:  # cosmetic: the arena shows the registered name; the handshake's is only logged
            report.warn(name, f"handshake {reply.name!r}, manifest {m.name!r} (the arena shows the manifest's)")
        missing, extra = sorted(set(m.games) - set(rulesets)), sorted(set(rulesets) - set(m.games))
        name = "handshake games match the manifest"
        if missing:  # the arena would seat it in a game it cannot play
            report.add(
                name, False, f"only the manifest lists {missing}" + (f"; only the handshake {extra}" * bool(extra))
            )
        elif extra:  # it is never seated in those
            report.warn(name, f"only the handshake lists {extra}: the arena seats it only in {', '.join(m.games)}")
        else:
            report.add(name, True, f"both list {', '.join(m.games)}")
    return rulesets, version


@dataclass
class GameTally:
    """What one game's matches showed, decision by decision."""

    phases: dict[str, list[int]] = field(default_factory=dict)  # phase -> [answers, not ok]
    first_bad: dict[str, DecisionEvent] = field(default_factory=dict)  # phase -> its first failing decision
    first_raised: DecisionEvent | None = None
    first_timeout: DecisionEvent | None = None
    slowest_ms: float = 0.0

    def on_event(self, event: Event) -> None:
        if not isinstance(event, DecisionEvent) or event.seat & 1:  # seats 1 and 3 are the opponent
            return
        tally = self.phases.setdefault(event.phase, [0, 0])
        tally[0] += 1
        self.slowest_ms = max(self.slowest_ms, event.latency_ms)
        if event.outcome == "ok":
            return
        tally[1] += 1
        self.first_bad.setdefault(event.phase, event)
        if event.outcome == "malformed_reply" and event.answer is None and self.first_raised is None:
            self.first_raised = event
        if event.outcome == "timeout" and self.first_timeout is None:
            self.first_timeout = event


def check_game(
    target: Target,
    opponent: str,
    game: str,
    settings: CheckSettings,
    report: CheckReport,
    records: list[dict[str, Any]],
    versions: Sequence[int] = (1, 2),
) -> None:
    tag = game if versions != (1,) else f"{game}, version 1"
    try:
        get_ruleset(game)
    except RulesetError as e:
        report.add(f"[{tag}] known to the referee", False, str(e))
        return
    tally = GameTally()
    outcomes: list[MatchOutcome] = []
    started = [target.process] if target.process is not None else []
    bots = [target.endpoint, opponent, target.endpoint, opponent]  # the bot is its own partner

    def on_event(event: Event) -> None:
        tally.on_event(event)
        if isinstance(event, DecisionEvent):
            decisions = sum(n for n, _bad in tally.phases.values())
            report.progress(f"[{tag}] playing: deal {event.deal_number + 1}, {decisions} decisions of the bot's")

    for attempt in range(4):  # more deals until declarations were asked for (bounded)
        match_settings = settings.match(game, attempt)
        links = BotLinks(match_settings.max_message_bytes, versions)
        more = " more" if attempt else ""
        deals = f"{settings.deals}{more} {'deal' if settings.deals == 1 else 'deals'}"
        report.progress(f"[{tag}] playing {deals}, the bot in seats 0 and 2", start=True)
        try:
            match_id = f"check-{game}-v{max(versions)}-{attempt}"
            outcomes.append(run_match(bots, match_settings, match_id, on_event, links=links, started=started))
        finally:
            links.close()
        records.append(outcomes[-1].record)
        if "declare" in tally.phases or outcomes[-1].forfeit:
            break

    def failed(event: DecisionEvent | None) -> Failed | None:
        return None if event is None else Failed(tag, event, target.log)

    for phase, label in {"auction": "auction", "declare": "declarations", "play": "play"}.items():
        answers, bad = tally.phases.get(phase, [0, 0])
        name = f"[{tag}] legal answers in {label}"
        if answers == 0:
            if phase == "declare":
                report.skip(name, "never asked in these deals")
            else:
                report.add(name, False, "never asked (were all deals thrown in?)")
            continue
        first = tally.first_bad.get(phase)
        detail = f"{answers - bad}/{answers} ok" + (f"; first: {failure_text(first)}" if first else "")
        report.add(name, bad == 0, detail, failed(first))
    own = [b for o in outcomes for b in o.bots if b.team == 0]
    timeouts = sum(b.counts["timeout"] for b in own)
    report.add(
        f"[{tag}] answers within the deadline",
        timeouts == 0 and tally.slowest_ms <= settings.deadline_ms,
        f"{timeouts} timeouts, slowest {tally.slowest_ms:.1f} ms (deadline {settings.deadline_ms} ms)",
        failed(tally.first_timeout),
    )
    crashed = [o.forfeit_reason for o in outcomes if o.forfeit]
    raised = tally.first_raised
    report.add(
        f"[{tag}] plays whole deals without crashing or answering an error",
        not crashed and raised is None,
        "; ".join(crashed + ([failure_text(raised)] if raised else [])),
        failed(raised),
    )
    for kind, label in (
        ("DealEnded", "end of deals"),
        ("MatchStarted", "start of matches"),
        ("MatchEnded", "end of matches"),
    ):
        failures = sum(b.notice_failures_by_kind.get(kind, 0) for b in own)
        sent = sum(b.notices_sent for b in own)
        report.add(
            f"[{tag}] acknowledges notices at {label}",
            failures == 0,
            f"{failures} {kind} notices failed" if failures else f"{sent} notices sent in all",
        )


# What a clean stop is, and how to get one, for the SIGTERM check's message (docs/submitting.md, "Stopping").
SIGTERM_EXPECTED = (
    "expected: exit status 0 after SIGTERM, once in-flight calls are answered (the Python SDK does it; a JVM: "
    'handle TERM (sun.misc.Signal.handle(new Signal("TERM"), s -> { server.shutdown(); System.exit(0); })) '
    "or end its shutdown hook with Runtime.getRuntime().halt(0); Node.js: process.on('SIGTERM', ...) then "
    "process.exit(0); C++: handle SIGTERM, Shutdown() the server, return 0 from main)"
)


def check_sigterm(target: Target, grace_s: float, report: CheckReport) -> None:
    """SIGTERM, then the bot must exit by itself within ``grace_s`` (it is killed after that), with status 0.
    Ended by the signal itself (no handler: -15, or 143 = 128 + 15 as a JVM or a shell reports it) is a
    warning: the arena loses nothing, but the bot stopped without finishing what it had in hand."""
    name = f"stops cleanly on SIGTERM within {grace_s:g} s"
    proc = target.process
    if proc is None:
        report.skip(name, target.unsignalled)
        return
    p = proc.process
    if p.poll() is not None:
        report.add(name, False, f"it had already exited with code {p.returncode}; log: {proc.stderr_path}")
        return
    report.progress(f"stopping it with SIGTERM (it has {grace_s:g} s)", start=True)
    started = time.monotonic()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(p.pid, signal.SIGTERM)
    try:
        code = p.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(timeout=5.0)
        report.add(
            name,
            False,
            f"still running {grace_s:g} s after SIGTERM (killed); {SIGTERM_EXPECTED}; log: {proc.stderr_path}",
        )
        return
    took = time.monotonic() - started
    if code == 0:
        report.add(name, True, f"exited with code 0 in {took:.2f} s")
    elif code in (-signal.SIGTERM, 128 + signal.SIGTERM):
        how = "killed by the signal" if code < 0 else f"exit status {code} = 128 + 15: it died of the signal"
        report.warn(name, f"{how} in {took:.2f} s, without a clean exit; {SIGTERM_EXPECTED}")
    else:
        report.add(name, False, f"exited with code {code} in {took:.2f} s; {SIGTERM_EXPECTED}; log: {proc.stderr_path}")


def run_checks(target: Target, opponent: str, settings: CheckSettings, report: CheckReport) -> list[dict[str, Any]]:
    started = time.monotonic()
    records: list[dict[str, Any]] = []
    check_health(target, report)
    listed, version = check_handshake(target, report)
    if listed:
        chosen = list(settings.games or listed)
        for game in chosen:
            if settings.games and game not in listed:
                report.add(f"[{game}] listed in the handshake", False, f"the bot lists {listed}")
                continue
            check_game(target, opponent, game, settings, report, records)
        playable = [g for g in chosen if g in listed]
        if version == 2 and playable:  # the version 2 bot's version 1 too (the first ruleset is enough)
            check_game(target, opponent, playable[0], settings, report, records, (1,))
    check_sigterm(target, settings.grace_s, report)
    report.add("check finished", True, f"in {time.monotonic() - started:.1f} s")
    return records


def check_bot(
    endpoint: str, settings: CheckSettings, report: CheckReport | None = None, manifest: Manifest | None = None
) -> CheckReport:
    """The checks of a bot that runs already (``arena.bots.validation`` runs them in the sandbox), against its
    ``manifest`` when given; the opponent is started here. Into ``report`` when given."""
    report = CheckReport() if report is None else report
    report.progress("starting the opponent", start=True)
    with launch_bots([resolve_bot(settings.opponent)], settings.logs, stop_grace_s=settings.grace_s) as (
        endpoints,
        procs,
    ):
        if procs and procs[0].error:
            report.add("the opponent starts", False, procs[0].error)
        else:
            # (In the sandbox the worker ends an instance by killing its cgroup: no SIGTERM to check there.)
            unsignalled = "not checked in the sandbox (a worker ends an instance with its cgroup); check-bot checks it"
            run_checks(
                Target(endpoint, manifest, unsignalled=f"{unsignalled} without --sandbox"),
                endpoints[0],
                settings,
                report,
            )
    return report
