"""The gRPC API's translation of messages, both ways: a request's fields as the service's values (a bot's
source, a ladder's gating settings, a field and its deprecated twin) and the service's answers as replies
(a bot, a ladder, a gate, a match).  No rule of the arena here: ``arena.service`` checks what it is given.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from pilotta.arena.v1 import arena_pb2

from arena.model import Bot, BotState, ForfeitLimits, ValidationError
from arena.rating.gating import GateConfig, GateSummary
from arena.service import BotSource, LadderView, MatchSummary, OwnerInfo


def bot_info(bot: Bot, state: BotState, full: bool = True) -> arena_pb2.BotInfo:
    """A bot as a reply shows it, with where it stands (``state``: ``Arena.bot_states``); ``full``: with its
    endpoint or manifest (replies to its owner only, never in a list)."""
    v = bot.current
    info = arena_pb2.BotInfo(
        name=bot.name, owner=bot.owner, version=v.version, retired=bot.retired, created_at=bot.created, kind=v.kind
    )
    if full and v.endpoint is not None:
        info.endpoint = v.endpoint
    elif full:
        info.manifest_json = json.dumps(dict(v.manifest or {}))
    info.rulesets.extend(v.games)
    info.games.extend(v.games)  # deprecated field, still filled
    info.suspended = bot.suspended
    info.state, info.state_reason = state.state, state.reason
    return info


def bot_source(source: arena_pb2.BotSource, games: Sequence[str], rulesets: Sequence[str]) -> BotSource:
    """The request's source; ``rulesets`` or its deprecated twin ``games``."""
    if games and rulesets and list(games) != list(rulesets):
        raise ValidationError(f"rulesets {list(rulesets)} and the deprecated games {list(games)} differ; give one")
    return BotSource(
        endpoint=source.endpoint if source.WhichOneof("source") == "endpoint" else "",
        manifest_json=source.manifest_json if source.WhichOneof("source") == "manifest_json" else "",
        manifest_dir=source.manifest_dir,
        rulesets=tuple(rulesets or games),
    )


def one_of(new: str, old: str, what: str) -> str:
    """A field and its deprecated twin: either one, or both equal."""
    if new and old and new != old:
        raise ValidationError(f"{what} {new!r} and the deprecated field {old!r} differ; give one")
    return new or old


def ladder_info(view: LadderView) -> arena_pb2.LadderInfo:
    cfg, run = view.config, view.run
    info = arena_pb2.LadderInfo(
        ladder=view.ladder_id,
        ruleset=cfg.ruleset,
        game=cfg.ruleset,
        options_json=json.dumps(dict(cfg.options), sort_keys=True),
        deals=cfg.deals or 0,
        target=cfg.target or 0,
        duplicate=cfg.duplicate,
        endpoint_bots=cfg.endpoint_bots,
        started=run is not None,
        scheduled=view.scheduled,
        members=view.members,
        name=view.name,
        is_default=view.is_default,
        waiting=view.queue.waiting - view.queue.claimed,
        playing=view.queue.claimed,
        oldest_age_seconds=view.queue.oldest_age_s,
    )
    if cfg.gating is not None:
        info.gating.CopyFrom(gate_settings(cfg.gating))
    limits = cfg.forfeit_limits
    info.forfeit_limits.CopyFrom(
        arena_pb2.ForfeitLimits(in_a_row=limits.in_a_row, window=limits.window, in_window=limits.in_window)
    )
    if run is not None:
        info.started_at = run.started
        info.max_in_flight = run.max_in_flight
        if run.budget is not None:
            info.budget = run.budget
    return info


def gate_config(m: arena_pb2.GateSettings) -> GateConfig:
    """A ladder's gating settings from the request (zero or absent: the default); ValidationError naming a
    bad one."""
    d = GateConfig()
    return GateConfig(
        mu0=m.mu0 if m.HasField("mu0") else d.mu0,
        mu1=m.mu1 if m.HasField("mu1") else d.mu1,
        alpha=m.alpha or d.alpha,
        beta=m.beta or d.beta,
        max_boards=m.max_boards or d.max_boards,
        min_boards=m.min_boards or d.min_boards,
    )


def forfeit_limits(m: arena_pb2.ForfeitLimits) -> ForfeitLimits:
    """A ladder's forfeit limits from the request (a field absent: the default); ValidationError naming a
    bad one."""
    d = ForfeitLimits()
    return ForfeitLimits(
        in_a_row=m.in_a_row if m.HasField("in_a_row") else d.in_a_row,
        window=m.window if m.HasField("window") else d.window,
        in_window=m.in_window if m.HasField("in_window") else d.in_window,
    )


def gate_settings(c: GateConfig) -> arena_pb2.GateSettings:
    return arena_pb2.GateSettings(
        mu0=c.mu0, mu1=c.mu1, alpha=c.alpha, beta=c.beta, max_boards=c.max_boards, min_boards=c.min_boards
    )


def gate_status(g: GateSummary) -> arena_pb2.GateStatus:
    s = g.state
    return arena_pb2.GateStatus(
        ladder=g.ladder,
        version=s.candidate,
        base=s.base,
        status=g.status,
        verdict=s.verdict,
        boards=s.boards,
        matches=s.matches,
        mean=g.mean,
        low=g.low,
        high=g.high,
        llr=g.llr,
        lower=g.bounds.lower,
        upper=g.bounds.upper,
        bot=g.bot,
        in_flight=g.in_flight,
    )


def match_summary(m: MatchSummary) -> arena_pb2.MatchSummary:
    out = arena_pb2.MatchSummary(
        match_id=m.match_id,
        ladder=m.ladder,
        ruleset=m.ruleset,
        game=m.ruleset,
        bots=list(m.bots),
        scores=list(m.points),
        forfeit_reason=m.forfeit,
        finished_at=m.finished,
        unrated=not m.rated,
        void=m.void,
        ladder_name=m.ladder_name,
    )
    if m.winner is not None:
        out.winner_side = m.winner
    return out


def owner_info(o: OwnerInfo) -> arena_pb2.OwnerInfo:
    return arena_pb2.OwnerInfo(name=o.name, created_at=o.created, revoked_at=o.revoked, active_bots=o.active_bots)
