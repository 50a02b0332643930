"""How a forfeit is rated (issue 24): a match lost by forfeit loses every board it did not play, so a bot
that forfeits cannot sit above working bots by mu.  The ladder of the issue replayed: its leader met the
forfeiter in half its matches; under the rule before (a duplicate match rated by the boards played, the
forfeit itself not at all) the forfeiter's mu stayed above the working bots'."""

from __future__ import annotations

from arena.model import BoardEntry, MatchResult
from arena.play.ladder import ladder_config
from arena.rating.ratings import Ratings, rated_games
from arena.store import keys

BOARDS = 16  # boards a match on the ladder (the default duplicate ladder)
KNOWN = "pilotta-forfeits"  # a ladder whose settings are stored: 16 boards a match
UNKNOWN = "pilotta-before"  # no settings stored: a forfeit is one game, as every forfeit was rated before


def _boards(won: int, lost: int) -> tuple[BoardEntry, ...]:
    """``won`` boards won then ``lost`` lost by side 0, the rest of the 16 tied."""
    scores = [1.0] * won + [-1.0] * lost + [0.0] * (BOARDS - won - lost)
    return tuple(BoardEntry((0, 0, 0, 0), s) for s in scores)


def _result(n: int, ladder: str, a: str, b: str, boards: tuple[BoardEntry, ...], forfeit: bool = False) -> MatchResult:
    wins = sum(x.score > 0 for x in boards) - sum(x.score < 0 for x in boards)
    winner = 1 if forfeit else (None if wins == 0 else int(wins < 0))
    return MatchResult(
        match_id=f"m-{ladder}-{n}",
        ladder=ladder,
        seats=(a, b, a, b),
        winner=winner,
        points=(0, 0),
        deals_played=len(boards),
        forfeit=f"bot {a} exceeded 3 strikes (4 illegal actions)" if forfeit else None,
        scale="winloss",
        boards=boards,
        finished=float(n),
    )


# The forfeiter's 3 boards before it forfeits: won, tied, lost (an even start, as a bot playing sensibly
# until the deal its illegal card comes in).
BEFORE_FORFEIT = tuple(BoardEntry((0, 0, 0, 0), s) for s in (1.0, 0.0, -1.0))


def _replay(ratings: Ratings, ladder: str) -> None:
    """The issue's ladder, in rounds: the leader meets the forfeiter twice a round and each working bot
    once; the two others meet each other once.  The leader wins 10 boards and loses 4 of 16 against either;
    the middle bot 8 and 5 against the weakest.  The forfeiter plays 3 boards, then forfeits in the 4th,
    every time (its opponent wins the match)."""
    n = 0
    for _ in range(12):
        for a, b, boards, forfeit in (
            ("forfeiter", "leader", BEFORE_FORFEIT, True),
            ("leader", "middle", _boards(10, 4), False),
            ("forfeiter", "leader", BEFORE_FORFEIT, True),
            ("leader", "weakest", _boards(10, 4), False),
            ("middle", "weakest", _boards(8, 5), False),
        ):
            n += 1
            assert ratings.apply(_result(n, ladder, a, b, boards, forfeit)) is True


def test_a_forfeit_loses_every_board_it_did_not_play() -> None:
    # Worked by hand: a forfeit after 3 boards (+1, 0, -1 for side 0) on a 16-board ladder, side 0 forfeiting:
    # the 3 played, then 13 more lost by side 0 (won by side 1: game winner 1); 16 boards rated.
    played = tuple(BoardEntry((0, 0, 0, 0), s) for s in (1.0, 0.0, -1.0))
    result = _result(1, KNOWN, "a", "b", played, forfeit=True)
    assert rated_games(result, BOARDS) == ([0, None, 1] + [1] * 13, 16)
    # Boards a match not known (a ladder that is not stored): the played boards only, as before.
    assert rated_games(result, 0) == ([0, None, 1], 3)
    # No board played, not known: one game, the match's winner.
    assert rated_games(_result(2, UNKNOWN, "a", "b", (), forfeit=True), 0) == ([1], 0)


def test_on_the_replayed_ladder_the_forfeiter_is_last_by_mu_and_by_mu_minus_3_sigma(r) -> None:
    r.hset(keys.LADDERS, KNOWN, ladder_config("pilotta", deals=BOARDS).to_json())
    ratings = Ratings(r)
    _replay(ratings, KNOWN)
    _replay(ratings, UNKNOWN)

    def order(ladder: str, key: str) -> list[str]:
        rows = {b: ratings.get(ladder, b) for b in ("leader", "middle", "weakest", "forfeiter")}
        value = {b: row.mu if key == "mu" else row.conservative for b, row in rows.items()}
        return sorted(value, key=lambda b: -value[b])

    # Now each forfeit is 1 board won, 1 tied and 14 lost of 16 against the leader, a far worse score than
    # the weakest working bot's 4 won and 10 lost against it, so both orders put the forfeiter last.
    assert order(KNOWN, "mu") == ["leader", "middle", "weakest", "forfeiter"]
    assert order(KNOWN, "conservative") == ["leader", "middle", "weakest", "forfeiter"]
    forfeiter = ratings.get(KNOWN, "forfeiter")
    assert forfeiter.games == 24 and forfeiter.losses == 24 and forfeiter.boards == 24 * BOARDS
    # The rule before (a duplicate match rated by its boards played alone), on the same matches: each
    # forfeit was an even 1-1-1 against the strongest bot, the forfeit itself not rated at all, so the
    # forfeiter's mu stays above both bots that lose to the leader 4 to 10, as in the issue.
    before = order(UNKNOWN, "mu")
    assert before.index("forfeiter") < before.index("middle") < before.index("weakest"), before
