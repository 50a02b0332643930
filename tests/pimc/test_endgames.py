"""The solver's values of hand-built endgames, worked out by hand (the reasoning is in each test)."""

from __future__ import annotations

from referee.actions import Strain
from referee.cards import parse_card
from referee.deal import Contract
from referee.rules import get_ruleset
from sample_bots.pimc.world import World, solve


def hands(*seats: str) -> tuple[int, int, int, int]:
    masks = [sum(1 << parse_card(c) for c in seat.split()) for seat in seats]
    return (masks[0], masks[1], masks[2], masks[3])


def card(name: str) -> int:
    return int(parse_card(name))


def test_pilotta_two_tricks_the_contract_threshold() -> None:
    """Pilotta, 90 H by seat 0. Left: seat 0 JH 7C, seat 1 9H 8C, seat 2 AS 7S, seat 3 TS KS; seat 0 leads.
    The last two tricks hold 59 card points and the last trick's 10; side 0 has 40, side 1 53.

    JH first: seat 1 must play 9H; seat 2 gives AS, seat 3 only KS: side 0 takes 20+14+11+4 = 49. Then 7C
    loses to seat 1's 8C, which also gets 7S and TS: side 0 ends on 89 < 90: the contract fails and side 1
    writes the whole deal, 162: -162 for side 0.
    7C first: seat 1's 8C takes it with 7S and TS (10); then seat 1 must lead 9H, JH takes it with AS and KS:
    side 0 gets 14+20+11+4+10 = 59, ends on 99: made, 99 against 63: +36."""
    world = World(
        get_ruleset("pilotta"),
        Contract(0, 90, Strain.HEARTS, 1),
        3,
        hands("JH 7C", "9H 8C", "AS 7S", "TS KS"),
        0,
        (),
        (40, 53),
        3,
        ((), ()),
    )
    assert solve(world).values == {card("JH"): -162, card("7C"): 36}
    # As card points alone (side 0's at the end): 89 and 99.
    assert solve(world, objective="points").values == {card("JH"): 89, card("7C"): 99}


def test_pilotta_three_tricks() -> None:
    """The deal above one trick earlier: each seat also holds a diamond (seat 0 AD, the others 7D 8D 9D),
    side 0 has 29, side 1 53. AD first takes 11 (everyone must follow), then 7C as above: side 0 ends on
    29 + 11 + 59 = 99, made, +36. Side 0 cannot do better: seat 0's 7C always loses to seat 1's 8C (seat 1
    can only be made to discard on spades, which seat 0 cannot lead), and seat 3 then puts its ten there."""
    world = World(
        get_ruleset("pilotta"),
        Contract(0, 90, Strain.HEARTS, 1),
        3,
        hands("JH 7C AD", "9H 8C 7D", "AS 7S 8D", "TS KS 9D"),
        0,
        (),
        (29, 53),
        3,
        ((), ()),
    )
    values = solve(world).values
    assert values[card("AD")] == 36
    assert max(values.values()) == 36


def test_coinche_all_trump_score_and_card_points_choose_differently() -> None:
    """Coinche with all-trump bids, 80 AT by seat 0, side 0 70 card points and side 1 45. Seat 0 announced
    belote in spades with KS and still holds QS: under all trump the queen completes it only if it leads or
    follows spades. Left: seat 0 TS QS, seat 1 JD 8H, seat 2 8D AS, seat 3 AC TD; seat 0 leads (all-trump
    points J 14, 9 9, A 6, 10 5, K 3, Q 1).

    QS first: belote made (+20). Seat 2 must go over with AS and takes the trick; seat 1 keeps JD, throwing
    8H, seat 3 throws TD: side 0 gets 1+0+6+5 = 12. Seat 2 must lead 8D and seat 1's JD takes it with AC
    and TS: side 1 gets 35. Side 0: 82 card points (the 82 needed), total 102: made, writes 100 + 80 = 180
    against side 1's 80 (45 + 35): +100.
    TS first: seat 2's AS takes it again (5+0+6+5 = 16 for side 0), seat 2 leads 8D and seat 0 must throw QS
    on a diamond: the belote is lost. Side 0: 86 card points, total 86: made, 90 + 80 = 170 against side 1's
    76, rounded 80: +90.
    So card points prefer TS (86 against 82) and the deal's score QS (+100 against +90)."""
    world = World(
        get_ruleset("coinche", {"all_trump_bids": True}),
        Contract(0, 80, Strain.ALL_TRUMP, 1),
        3,
        hands("TS QS", "JD 8H", "8D AS", "AC TD"),
        0,
        (),
        (70, 45),
        3,
        ((), ()),
        belote_second=1 << card("QS"),
    )
    assert solve(world).values == {card("QS"): 100, card("TS"): 90}
    assert solve(world, objective="points").values == {card("QS"): 82, card("TS"): 86}
