"""What a scored deal gives (``DealScore``): each side's card points, declarations and belote, the capot,
whether the contract was made, the multiplier, the points written to the game score and those left hanging,
and the notes that say why (``referee.notes``); with the JSON form a game record states
(docs/game-record.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from referee.notes import Note


@dataclass
class DealScore:
    """The breakdown of a scored deal. Sides are indexed 0 and 1; points are before any game rounding
    unless named ``written``."""

    card_points: list[int]
    declarations: list[int]
    belote: list[int]
    capot: int | None  # the side that took every trick
    contract_made: bool | None  # None for a deal thrown in
    multiplier: int
    written: list[int]  # points written to the game score for this deal
    hanging: int = 0  # points left hanging for the winner of the next deal
    notes: list[Note] = field(default_factory=list)  # why it scored so: codes with values (referee.notes)

    def to_json(self) -> dict[str, object]:
        return {
            "card_points": list(self.card_points),
            "declarations": list(self.declarations),
            "belote": list(self.belote),
            "capot": self.capot,
            "contract_made": self.contract_made,
            "multiplier": self.multiplier,
            "written": list(self.written),
            "hanging": self.hanging,
            "notes": [n.to_json() for n in self.notes],
        }
