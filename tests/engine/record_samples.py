"""Game records written by hand for the record tests (not produced by the engine), and engine records
picked for a feature they show (a contra, credited declarations, a turned card, hanging points).

The hand-written deal is the worked example of docs/rules/pilotta.md (deal ``TWO`` of
tests/rules/test_pilotta_scoring.py): dealer 3, seat 0 bids 80 hearts, all pass. Tricks, leader first:
AC 8C 9C JC (seat 0, 13) · 7C TC KC QC (seat 1, 17) · AD TD KD 9D (seat 1, 25) · 7D JD QD 8D (seat 3, 5) ·
QH(belote) JH 8H TH (seat 0, 33) · 7H 9H AH KH (seat 1, 29, belote completed) · KS AS 9S QS (seat 2, 18) ·
8S JS TS 7S (seat 0, 12 + 10 for the last trick). Side 0 takes 86, side 1 76 and seat 3's belote (20).
"""

from __future__ import annotations

import copy
import functools
import json
import random
from collections.abc import Callable
from typing import Any

from referee.boards import Board
from referee.cards import Card
from referee.cli import play_random_game
from referee.record import dumps, game_to_record
from referee.rules import get_ruleset

PILOTTA_OPTIONS = {
    "target": 351,
    "max_bid": 250,
    "no_trump_bids": False,
    "all_trump_bids": False,
    "capot_bonus": 90,
    "failed_belote_penalty": False,
    "run_order": "natural",
    "partner_exception": False,
}

# Each seat's hand, read off the tricks above.
HANDS = [
    ["AC", "7C", "9D", "8D", "JH", "7H", "QS", "TS"],
    ["8C", "TC", "AD", "7D", "8H", "9H", "KS", "7S"],
    ["9C", "KC", "TD", "JD", "TH", "AH", "AS", "8S"],
    ["JC", "QC", "KD", "QD", "QH", "KH", "9S", "JS"],
]
# Dealt 3-2-3 from seat 0 (the seat after dealer 3): three cards to each seat, two to each, three to each.
PACK = [
    *("AC", "7C", "9D"),
    *("8C", "TC", "AD"),
    *("9C", "KC", "TD"),
    *("JC", "QC", "KD"),
    *("8D", "JH"),
    *("7D", "8H"),
    *("JD", "TH"),
    *("QD", "QH"),
    *("7H", "QS", "TS"),
    *("9H", "KS", "7S"),
    *("AH", "AS", "8S"),
    *("KH", "9S", "JS"),
]
TRICKS = [  # (leader, cards in order of play)
    (0, ["AC", "8C", "9C", "JC"]),
    (0, ["7C", "TC", "KC", "QC"]),
    (1, ["AD", "TD", "KD", "9D"]),
    (1, ["7D", "JD", "QD", "8D"]),
    (3, ["QH belote", "JH", "8H", "TH"]),
    (0, ["7H", "9H", "AH", "KH"]),
    (1, ["KS", "AS", "9S", "QS"]),
    (2, ["8S", "JS", "TS", "7S"]),
]


def _plays() -> list[dict[str, Any]]:
    return [
        {"seat": (leader + k) % 4, "action": f"play {card}"} for leader, cards in TRICKS for k, card in enumerate(cards)
    ]


def hand_deal(number: int, *, contra: bool = False, totals_before: tuple[int, int] = (0, 0)) -> dict[str, Any]:
    """The worked deal, played; with ``contra`` seat 1 doubles the 80 and the three others pass."""
    auction = [{"seat": 0, "action": "bid 80 H"}]
    if contra:
        auction += [{"seat": 1, "action": "contra"}, {"seat": 2, "action": "pass"}]
        auction += [{"seat": 3, "action": "pass"}, {"seat": 0, "action": "pass"}]
    else:
        auction += [{"seat": s, "action": "pass"} for s in (1, 2, 3)]
    # Made (86 >= 80): each side writes its own points; the belote is never multiplied.
    written = [172, 172] if contra else [86, 96]
    return {
        "number": number,
        "seed": None,
        "dealer": 3,
        "deck": list(PACK),
        "hands": copy.deepcopy(HANDS),
        "actions": auction + _plays(),
        "contract": {"bidder": 0, "value": 80, "strain": "H", "multiplier": 2 if contra else 1},
        "thrown_in": False,
        "declarations": [{"seat": s, "announced": [], "credited": []} for s in range(4)],
        "belotes": [{"seat": 3, "suit": "H", "completed": True, "lost": False}],
        "score": {
            "card_points": [86, 76],
            "declarations": [0, 0],
            "belote": [0, 20],
            "capot": None,
            "contract_made": True,
            "multiplier": 2 if contra else 1,
            "written": written,
            "hanging": 0,
        },
        "totals": [totals_before[0] + written[0], totals_before[1] + written[1]],
        "hanging_after": 0,
    }


def thrown_in_deal(number: int) -> dict[str, Any]:
    """Everyone passes: nothing is scored, and in Pilotta the same dealer deals again."""
    return {
        "number": number,
        "dealer": 3,
        "deck": list(reversed(PACK)),
        "actions": [{"seat": s, "action": "pass"} for s in (0, 1, 2, 3)],
        "contract": None,
        "thrown_in": True,
        "declarations": [{"seat": s, "announced": [], "credited": []} for s in range(4)],
        "belotes": [],
        "score": {
            "card_points": [0, 0],
            "declarations": [0, 0],
            "belote": [0, 0],
            "capot": None,
            "contract_made": None,
            "multiplier": 1,
            "written": [0, 0],
            "hanging": 0,
        },
        "totals": [0, 0],
        "hanging_after": 0,
    }


def hand_record(*, contra: bool = False, thrown_in_first: bool = False) -> dict[str, Any]:
    """A one-deal Pilotta game (``max_deals`` 1) over the worked deal, with no seed: the pack is given."""
    deals = [thrown_in_deal(0)] if thrown_in_first else []
    deals.append(hand_deal(len(deals), contra=contra))
    final = deals[-1]["totals"]
    return {
        "format": "pilotta-arena/game-record",
        "format_version": 2,
        "ruleset": {"name": "pilotta", "version": 1, "options": dict(PILOTTA_OPTIONS)},
        "seed": None,
        "first_dealer": 3,
        "max_deals": 1,
        "deals": deals,
        "result": {
            "winner": None if final[0] == final[1] else int(final[1] > final[0]),
            "scores": list(final),
            "over": True,
            "reason": "1 deals played",
        },
    }


def random_boards(seed: int, count: int = 6) -> tuple[Board, ...]:
    """Boards drawn here, not by the engine's seed: shuffled packs and dealers from ``random.Random``."""
    rng = random.Random(f"boards:{seed}")
    boards = []
    for _ in range(count):
        cards = list(range(32))
        rng.shuffle(cards)
        boards.append(Board(tuple(Card(c) for c in cards), rng.randrange(4)))
    return tuple(boards)


@functools.lru_cache(maxsize=256)
def _engine_text(name: str, seed: int, max_deals: int | None, boards: bool) -> str:
    given = random_boards(seed) if boards else None
    return dumps(game_to_record(play_random_game(get_ruleset(name), seed, max_deals, given)))


def engine_record(name: str, seed: int, max_deals: int | None = None, *, boards: bool = False) -> dict[str, Any]:
    """A record the engine wrote for a random game (a fresh copy each call); with ``boards``, a game over
    six given boards (no seed)."""
    result: dict[str, Any] = json.loads(_engine_text(name, seed, max_deals, boards))
    return result


def find_deal(name: str, has: Callable[[dict[str, Any]], bool], max_deals: int = 3) -> tuple[dict[str, Any], int]:
    """An engine record of ``name`` with a deal that ``has`` the feature; (record, deal index)."""
    for seed in range(400):
        record = engine_record(name, seed, max_deals)
        for i, deal in enumerate(record["deals"]):
            if has(deal):
                return record, i
    raise AssertionError(f"no {name} deal with the feature in 400 seeds")
