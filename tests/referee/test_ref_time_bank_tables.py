"""One time bank per instance (issue 23): a seat's deadlines carry nothing of what its partner (another
instance of its bot) or the bot's instances at the other table of a duplicate pair spend.

No bot and no clock: ``MatchRunner.ask`` is replaced by answers of a chosen latency, so each decision's
spending is exact. At table 1 every seat answers 60 ms past every deadline; at table 0 at once. Every
DecideRequest of table 0 must carry the whole bank, and each seat of table 1 must see its own spending
alone. With one bank per bot and match, they carried the others' spending: a few bits a decision, that
partners, or a bot's instances at the two tables (which hold the same boards at the same time), could
read as cards.
"""

from __future__ import annotations

from pilotta.arena.v1 import bot_pb2

from referee.match import MatchSettings
from referee.match.runner import MatchRunner
from referee.match.table import Table, new_game
from referee.match.transport import Answer

DEADLINE_MS, BANK_MS, OVER_MS = 100, 5000, 60


class ScriptedRunner(MatchRunner):
    """Every answer is the first legal action (or the lowest bid while nobody has bid), given at table 1
    ``OVER_MS`` past the deadline, at table 0 at once; what each request said of the bank is kept, by
    (leg, seat)."""

    seen: list[tuple[int, int, int]]

    def ask(self, t: Table, seat: int, request: bytes) -> Answer:
        decide = bot_pb2.DecideRequest.FromString(request)
        self.seen.append((t.leg, seat, decide.time_bank_ms))
        latency = DEADLINE_MS + OVER_MS if t.leg == 1 else 1.0
        legal = list(decide.legal_actions)
        # The lowest bid when nobody has bid yet (four passes would throw every deal in), else the first.
        index = 1 if legal[0] == "pass" and len(legal) > 1 and legal[1].startswith("bid 80") else 0
        return Answer(bot_pb2.DecideReply(index=index), latency)


def test_one_table_s_spending_never_shows_in_the_other_table_s_deadlines() -> None:
    settings = MatchSettings(seed=5, deals=2, duplicate=True, deadline_ms=DEADLINE_MS, time_bank_ms=BANK_MS)
    seat_endpoints = [[f"unix:/nowhere/leg{leg}-seat{x}" for x in range(4)] for leg in range(2)]
    runner = ScriptedRunner(
        seat_endpoints[0][:2], ["a", "b"], settings, "m-bank", None, None, seat_endpoints=seat_endpoints
    )
    runner.seen = []
    tables = [runner.table(0), runner.table(1)]
    for t in tables:
        t.game = new_game(settings, runner.ruleset, runner.boards)
    try:
        # Table 1 first, then the two in turn: table 0 is always asked after table 1 has spent.
        for _ in range(40):
            for t in (tables[1], tables[0]):
                assert t.game is not None
                if not t.game.over:
                    runner.step(t)
    finally:
        runner.link_pool.close()
    at_table_0 = [told for leg, _seat, told in runner.seen if leg == 0]
    assert len(at_table_0) == 40 and set(at_table_0) == {BANK_MS}
    # Each seat of table 1 sees its own bank go down by its own spending, decision by decision, and by
    # nothing else (its partner spends as much at the same table meanwhile).
    for seat in range(4):
        told = [t for leg, s, t in runner.seen if leg == 1 and s == seat]
        assert len(told) >= 9 and told == [BANK_MS - OVER_MS * i for i in range(len(told))], (seat, told)
        assert runner.bank(tables[1], seat) == BANK_MS - OVER_MS * len(told)
        assert runner.bank(tables[0], seat) == BANK_MS
    # The record's figure is the least left in any of the bot's banks.
    spent = max(sum(1 for leg, s, _t in runner.seen if leg == 1 and s == seat) for seat in (0, 2))
    assert runner.bots[tables[1].seats[0]].time_bank_ms == BANK_MS - OVER_MS * spent
