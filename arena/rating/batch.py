"""The batch rating of a ladder: every stored board refitted at once (``arena.rating.bradley_terry``), beside the
live OpenSkill rating, and the head-to-head table of the ladder's pairs.

The boards are those ``arena.rating.ratings`` appends per ladder as it rates each match (matches between two
bots that each hold a side alone); the list keeps the latest ``ratings.BOARDS_CAP`` matches' boards.
The fit is anchored on one bot, ``random`` by default, held at 0; a rating is provisional (listed, not
ranked) until its bootstrap interval is narrower than ``PROVISIONAL_WIDTH_ELO`` and the bot has played
``PROVISIONAL_BOARDS`` boards.

The fit and its bootstrap take seconds on a big ladder and are the same until a board is added (the seed
is fixed), so ``BatchCache`` keeps each (ladder, anchor)'s table and recomputes it only when the ladder's
board list has changed: its length and its last entry, read in one round trip, say so.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from arena.rating.bradley_terry import BatchRating, BoardScore, HeadToHead, batch_ratings, head_to_head
from arena.store import keys
from referee.scales import as_fraction

DEFAULT_ANCHOR = "random"
BOOTSTRAP_ROUNDS = 200
CACHED_TABLES = 32


@dataclass(frozen=True)
class BatchTable:
    ladder: str
    anchor: str  # bot id held at 0
    boards: int
    ratings: list[BatchRating]  # ranked ones first (best first), then the provisional ones
    head_to_head: list[HeadToHead]

    def ranked(self) -> list[BatchRating]:
        return [row for row in self.ratings if not row.provisional()]


def ladder_boards(r: Any, ladder: str) -> list[BoardScore]:
    """Every board stored for ``ladder``, as Bradley–Terry takes them (A's score as a fraction)."""
    out = []
    for raw in r.lrange(keys.ladder_boards(ladder), 0, -1):
        entry = json.loads(raw)
        out += [BoardScore(entry["a"], entry["b"], as_fraction(float(s))) for s in entry["scores"]]
    return out


def batch_table(r: Any, ladder: str, anchor: str, rounds: int = BOOTSTRAP_ROUNDS, seed: int = 0) -> BatchTable:
    """The ladder's batch rating anchored on bot id ``anchor`` (ValueError if it played no board)."""
    boards = ladder_boards(r, ladder)
    rows = batch_ratings(boards, anchor, rounds=rounds, seed=seed) if boards else []
    ordered = [row for row in rows if not row.provisional()] + [row for row in rows if row.provisional()]
    return BatchTable(ladder, anchor, len(boards), ordered, head_to_head(boards))


def named(table: BatchTable, names: Mapping[str, str]) -> dict[str, Any]:
    """The table as JSON, with bot names."""
    rank = 0
    ratings = []
    for row in table.ratings:
        provisional = row.provisional()
        rank += not provisional
        ratings.append(
            {
                "rank": None if provisional else rank,
                "bot": names.get(row.bot, row.bot),
                "elo": row.elo,
                "low": row.low,
                "high": row.high,
                "boards": row.boards,
                "provisional": provisional,
            }
        )
    return {
        "ladder": table.ladder,
        "anchor": names.get(table.anchor, table.anchor),
        "boards": table.boards,
        "ratings": ratings,
        "head_to_head": [
            {
                "a": names.get(h.a, h.a),
                "b": names.get(h.b, h.b),
                "boards": h.boards,
                "mean": h.mean,
                "low": h.low if h.boards >= 2 else None,  # one board has no interval
                "high": h.high if h.boards >= 2 else None,
            }
            for h in table.head_to_head
        ],
    }


class BatchCache:
    """Batch tables by (ladder, anchor), recomputed only when the ladder's boards changed (thread-safe)."""

    def __init__(self, size: int = CACHED_TABLES) -> None:
        self.size = size
        self._tables: OrderedDict[tuple[str, str], tuple[tuple[int, str], BatchTable]] = OrderedDict()
        self._lock = threading.Lock()
        self.computed = 0  # tables fitted (not served from the cache), for the tests and the curious

    def table(self, r: Any, ladder: str, anchor: str) -> BatchTable:
        with r.pipeline(transaction=False) as p:
            p.llen(keys.ladder_boards(ladder))
            p.lindex(keys.ladder_boards(ladder), -1)
            length, last = p.execute()
        stamp = (int(length), str(last or ""))
        with self._lock:
            hit = self._tables.get((ladder, anchor))
            if hit is not None and hit[0] == stamp:
                self._tables.move_to_end((ladder, anchor))
                return hit[1]
        # Fitted outside the lock: two requests for the same new table may both fit it (the same table).
        table = batch_table(r, ladder, anchor)
        with self._lock:
            self.computed += 1
            self._tables[(ladder, anchor)] = (stamp, table)
            self._tables.move_to_end((ladder, anchor))
            while len(self._tables) > self.size:
                self._tables.popitem(last=False)
        return table
