"""The CLI's leaderboard table (every column from the reply, the version and the endpoint mark included) and its
match lines (a forfeit never reads as a draw)."""

from __future__ import annotations

import json

from pilotta.arena.v1 import arena_pb2

from arena.cli.results import format_leaderboard, match_line


def test_the_table_shows_each_bots_version_interval_record_and_endpoint_mark() -> None:
    stats = json.dumps({"contracts_made": 7, "contracts_bid": 9, "latency_p50_ms": 1.25})
    reply = arena_pb2.LeaderboardReply(
        ladder="pilotta-0123456789",
        ladder_name="main",
        entries=[
            arena_pb2.LeaderboardEntry(
                rank=1,
                bot="pimc",
                version=3,
                mu=30.0,
                sigma=2.0,
                conservative=24.0,
                games=40,
                wins=30,
                losses=8,
                draws=2,
                stats_json=stats,
            ),
            arena_pb2.LeaderboardEntry(
                rank=2,
                bot="remote",
                version=1,
                mu=25.0,
                sigma=8.0,
                conservative=1.0,
                games=3,
                wins=1,
                losses=2,
                endpoint=True,
            ),
        ],
    )
    lines = [" ".join(line.split()) for line in format_leaderboard(reply).splitlines()]  # columns, one space apart
    # The ladder by its name, its id after it (what the other commands also take).
    assert lines[0] == "Leaderboard of ladder main (pilotta-0123456789) (ordered by mu - 3 sigma)"
    assert lines[1] == "# bot ver mu sigma mu-3s ~95% skill games W-L-D made/bid p50 ms"
    # mu ± 2 sigma: 30 ± 4 and 25 ± 16; the second bot has no statistics yet.
    assert lines[2] == "1 pimc 3 30.00 2.00 24.00 [ 26.0, 34.0] 40 30-8-2 7/9 1.25"
    assert lines[3] == "2 remote 1 25.00 8.00 1.00 [ 9.0, 41.0] 3 1-2-0 0/0 0.00 endpoint"


def test_an_empty_ladder_says_so() -> None:
    text = format_leaderboard(arena_pb2.LeaderboardReply(ladder="new"))
    assert text.splitlines()[-1] == "  (no rated games yet)"


def test_a_match_line_says_how_it_ended_and_a_forfeit_is_no_draw() -> None:
    def line(**kw: object) -> str:
        m = arena_pb2.MatchSummary(match_id="m-1", bots=["ann", "bob", "ann", "bob"], scores=[0, 0], **kw)
        return " ".join(match_line(m).split())

    assert line(winner_side=0) == "m-1 ann vs bob 0-0 ann won"
    assert line() == "m-1 ann vs bob 0-0 draw"
    # bob forfeited: ann wins by it, whatever the points when play stopped.
    assert line(winner_side=0, forfeit_reason="bot bob crashed") == (
        "m-1 ann vs bob 0-0 ann won by forfeit forfeit: bot bob crashed"
    )
    # Neither side could play: void, not a draw.
    assert line(forfeit_reason="void: bot ann crashed; bot bob crashed", void=True) == (
        "m-1 ann vs bob 0-0 void: neither side could play forfeit: void: bot ann crashed; bot bob crashed"
    )
