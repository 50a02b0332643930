"""How a forfeit is rated (issue 24): a match lost by forfeit loses every board it did not play, and one
game more to the floor of the scale, so a bot that forfeits cannot sit above working bots by mu.  The ladder
of the issue replayed: its leader met the forfeiter in half its matches; under the rule before (a duplicate
match rated by the boards played, the forfeit itself not at all) the forfeiter's mu stayed above the working
bots'; and the system test's ladder of 2 boards a match, where only the floor game puts it last by mu."""

from __future__ import annotations

import math

import pytest

from arena.model import BoardEntry, MatchResult
from arena.play.ladder import ladder_config
from arena.rating.ratings import FORFEIT_FLOOR, Ratings, forfeiting_side, rated_games
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


def _replay(ratings: Ratings, ladder: str, rule_before: bool = False) -> None:
    """The issue's ladder, in rounds: the leader meets the forfeiter twice a round and each working bot
    once; the two others meet each other once.  The leader wins 10 boards and loses 4 of 16 against either;
    the middle bot 8 and 5 against the weakest.  The forfeiter plays 3 boards, then forfeits in the 4th,
    every time (its opponent wins the match).  ``rule_before``: the results as they were rated before issue 24,
    by the boards played alone (the forfeit itself not at all)."""
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
            assert ratings.apply(_result(n, ladder, a, b, boards, forfeit and not rule_before)) is True


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
    _replay(ratings, UNKNOWN, rule_before=True)

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


def _weng_lin_loss(mu: float, sigma: float, mu_w: float, sigma_w: float) -> tuple[float, float]:
    """One game lost to one opponent under Plackett-Luce as Weng and Lin (2011, algorithm 4) write it, with
    openskill's defaults beta = 25/6, kappa = 1e-4, gamma = sigma / c and tau = 25/300 (the dynamics added to
    each sigma^2 before a game, TrueSkill's tau): worked from the paper, not the library.
    c^2 = sigma^2 + sigma_w^2 + 2 beta^2; p = the loser's share exp(mu/c) / (exp(mu/c) + exp(mu_w/c));
    Omega = -(sigma^2 / c) p (the winner's rank set is both players; the loser's own set is itself, p = 1, 0);
    Delta = gamma (sigma^2 / c^2) p (1 - p); sigma'^2 = sigma^2 max(1 - Delta, kappa)."""
    beta, tau = 25 / 6, 25 / 300
    sigma, sigma_w = math.sqrt(sigma**2 + tau**2), math.sqrt(sigma_w**2 + tau**2)
    c = math.sqrt(sigma**2 + sigma_w**2 + 2 * beta**2)
    p = math.exp(mu / c) / (math.exp(mu / c) + math.exp(mu_w / c))
    omega = -(sigma**2 / c) * p
    delta = (sigma / c) * (sigma**2 / c**2) * p * (1 - p)
    return mu + omega, math.sqrt(sigma**2 * max(1 - delta, 1e-4))


def test_a_forfeit_is_one_game_more_lost_to_the_floor_of_the_scale(r) -> None:
    # A newcomer forfeits before its first board is complete, on a ladder that does not say its boards a
    # match: its one game (the match) lost to its opponent, then one lost to the floor (mu 0, sigma 1).  The
    # opponent moves by the first game alone.
    ratings = Ratings(r)
    result = _result(1, UNKNOWN, "newcomer", "other", (), forfeit=True)
    assert forfeiting_side(result) == 0
    assert ratings.apply(result) is True
    mu, sigma = _weng_lin_loss(25.0, 25 / 3, 25.0, 25 / 3)  # lost to the opponent, both at the prior
    mu, sigma = _weng_lin_loss(mu, sigma, *FORFEIT_FLOOR)
    got = ratings.get(UNKNOWN, "newcomer")
    assert (got.mu, got.sigma) == (pytest.approx(mu, abs=1e-9), pytest.approx(sigma, abs=1e-9))
    assert (got.games, got.losses) == (1, 1)  # still one match
    other = ratings.get(UNKNOWN, "other")
    assert other.mu == pytest.approx(25.0 + (25.0 - _weng_lin_loss(25.0, 25 / 3, 25.0, 25 / 3)[0]), abs=1e-9)
    # By hand, the floor game alone from the prior: c^2 = 69.44 + 1 + 34.72 = 105.17, c = 10.255,
    # p = 1 / (1 + exp(-25 / 10.255)) = 0.9197, mu' = 25 - 6.772 x 0.9197 = 18.77.
    assert _weng_lin_loss(25.0, 25 / 3, *FORFEIT_FLOOR)[0] == pytest.approx(18.77, abs=0.01)
    # A match not forfeited, a void one and an unrated one have no floor game.
    assert forfeiting_side(_result(2, UNKNOWN, "a", "b", _boards(3, 1))) is None
    void = MatchResult(
        match_id="m-void", ladder=UNKNOWN, seats=("a", "b", "a", "b"), winner=None, points=(0, 0),
        deals_played=0, forfeit="void: neither side started", rated=False, void=True,
    )  # fmt: skip
    assert forfeiting_side(void) is None


def _short_ladder(ratings: Ratings, ladder: str) -> None:
    """The system test's ladder (tests/system/test_system_ranking.py: 2 boards a match, suspended after 3
    forfeits in a row) as loaded run 9 of issue 22 played it: the forfeiter meets the strongest bot three
    times and forfeits each before a board is complete, then plays no more; the weak bot (a random bot)
    meets both strong bots twice a round for 10 rounds and wins 1 board in 12 of them; the strong bots
    split their boards."""
    n, played = 0, 0
    for _ in range(3):
        n += 1
        assert ratings.apply(_result(n, ladder, "forfeiter", "strong1", (), forfeit=True)) is True
    for _ in range(10):
        for strong in ("strong1", "strong2"):
            played += 2
            won = (played % 12 == 0) + ((played - 1) % 12 == 0)
            n += 1
            boards = (BoardEntry((0, 0, 0, 0), 1.0),) * won + (BoardEntry((0, 0, 0, 0), -1.0),) * (2 - won)
            assert ratings.apply(_result(n, ladder, "weak", strong, boards)) is True
        n += 1
        even = (BoardEntry((0, 0, 0, 0), 1.0), BoardEntry((0, 0, 0, 0), -1.0))
        assert ratings.apply(_result(n, ladder, "strong1", "strong2", even)) is True


def test_on_a_ladder_of_two_boards_a_match_the_floor_game_puts_the_forfeiter_last_by_mu(r, monkeypatch) -> None:
    short, without = "pilotta-two-boards", "pilotta-two-boards-no-floor"
    for ladder in (short, without):
        r.hset(keys.LADDERS, ladder, ladder_config("pilotta", deals=2).to_json())
    ratings = Ratings(r)
    _short_ladder(ratings, short)
    # The rule of stop 31 (every board lost, no floor game): the forfeiter's 6 boards lost to the strongest
    # bot leave its mu above the weak bot's, as in loaded run 9 (15.6 against 13.5), though mu - 3 sigma
    # puts it last.
    with monkeypatch.context() as m:
        m.setattr("arena.rating.ratings.forfeiting_side", lambda result: None)
        _short_ladder(ratings, without)
    rows = {b: ratings.get(without, b) for b in ("strong1", "strong2", "weak", "forfeiter")}
    assert rows["forfeiter"].mu > rows["weak"].mu, rows
    assert min(rows.values(), key=lambda x: x.conservative).bot_id == "forfeiter"
    # With the floor game each forfeit also costs one game lost to mu 0: last by both orders, by far.
    rows = {b: ratings.get(short, b) for b in ("strong1", "strong2", "weak", "forfeiter")}
    by_mu = sorted(rows, key=lambda b: rows[b].mu)
    by_conservative = sorted(rows, key=lambda b: rows[b].conservative)
    assert by_mu[0] == by_conservative[0] == "forfeiter", rows
    assert rows["forfeiter"].mu < rows["weak"].mu - 2 * (25 / 6), rows  # more than two betas below
