"""Readable text of games and deals: what `referee play` and `referee verify` print for people."""

from __future__ import annotations

from collections.abc import Sequence

from referee.cards import SUIT_MASKS, card_name, cards_in
from referee.deal import Deal
from referee.game import Game

SEAT_NAMES = ("South", "East", "North", "West")  # in the order of play


def hand_text(mask: int) -> str:
    parts = []
    for suit in (3, 2, 1, 0):
        cards = [card_name(c)[0] for c in reversed(cards_in(mask & SUIT_MASKS[suit]))]
        parts.append("♣♦♥♠"[suit] + ("".join(cards) or "-"))
    return " ".join(parts)


def deal_text(deal: Deal, number: int) -> list[str]:
    out = [f"Deal {number + 1}: dealer {SEAT_NAMES[deal.dealer]}"]
    for seat in range(4):
        out.append(f"  {SEAT_NAMES[seat]:<5} {hand_text(deal.dealt[seat])}")
    if deal.turned_card is not None:
        out.append(f"  turned up: {card_name(deal.turned_card)}")
    calls = [f"{SEAT_NAMES[s][0]}:{deal.code(a, s)}" for s, a in deal.auction]
    out.append("  auction: " + ", ".join(calls))
    if deal.thrown_in or deal.contract is None:
        out.append("  all passed: thrown in")
        return out
    out.append(f"  contract: {deal.contract.describe()} ({SEAT_NAMES[deal.contract.bidder]})")
    for seat in range(4):
        if deal.announced[seat]:
            out.append(f"  {SEAT_NAMES[seat]} declares " + ", ".join(d.describe() for d in deal.announced[seat]))
    for i, trick in enumerate(deal.tricks):
        cards = " ".join(f"{SEAT_NAMES[trick.seat_of(k)][0]}:{card_name(c)}" for k, c in enumerate(trick.cards))
        out.append(f"  trick {i + 1}: {cards}  -> {SEAT_NAMES[trick.winner]}")
    for b in deal.belotes:
        state = "counts" if b.completed else "lost" if b.lost else "open"
        out.append(f"  belote: {SEAT_NAMES[b.seat]} in {'♣♦♥♠'[b.suit]} ({state})")
    if deal.score is not None:
        out.extend("  " + line for line in score_lines(deal))
    return out


def score_lines(deal: Deal) -> list[str]:
    s = deal.score
    if s is None:
        return []
    lines = [
        f"card points {s.card_points[0]} / {s.card_points[1]}, declarations {s.declarations[0]} / "
        f"{s.declarations[1]}, belote {s.belote[0]} / {s.belote[1]}",
        f"capot: {'side ' + str(s.capot) if s.capot is not None else 'no'}; contract "
        f"{'made' if s.contract_made else 'failed'}; multiplier x{s.multiplier}; written "
        f"{s.written[0]} / {s.written[1]}" + (f"; hanging {s.hanging}" if s.hanging else ""),
    ]
    lines.extend(n.text for n in s.notes)
    return lines


def game_text(game: Game, sides: Sequence[str] = ("side 0", "side 1")) -> str:
    """The whole game, deal by deal; ``sides`` names each side in the result (the bots, where known)."""
    out = [
        f"{game.ruleset.title or game.ruleset.name}: seed {game.seed}, target {game.ruleset.target}, "
        f"first dealer {SEAT_NAMES[game.first_dealer]}",
        "Sides: 0 = South/North, 1 = East/West",
        "",
    ]
    for number, deal in enumerate(game.deals):
        out.extend(deal_text(deal, number))
        if number < len(game.totals_history):
            a, b = game.totals_history[number]
            out.append(f"  totals: {a} / {b}")
        out.append("")
    winner = "draw" if game.winner is None else f"{sides[game.winner]} won"
    out.append(
        f"Result: {winner}, {sides[0]} {game.scores[0]}, {sides[1]} {game.scores[1]} ({game.end_reason or 'not over'})"
    )
    return "\n".join(out)
