"""The live stream of a real duplicate match (the real runner, sample bots over gRPC, both tables at once): what
it holds is, board by board, both tables' calls and cards of that board and their scores, exactly as the final
record has them, and nothing else (no card but those played, a declaration's cards only with its deal's end)."""

from __future__ import annotations

import json
import re

import pytest
from system_helpers import SAMPLES

from arena.bots.registry import Registry
from arena.model import MatchSpec
from arena.play.runner import ArenaRunner
from arena.store import keys

CARD = re.compile(r"\b[789TJQKA][CDHS]\b")


def _register(reg: Registry, name: str, sample: str) -> str:
    manifest = json.loads((SAMPLES / sample / "manifest.json").read_text())
    bot, _token = reg.register(name, "tests", manifest=manifest, manifest_dir=str(SAMPLES / sample))
    return bot.bot_id


def _public(code: str) -> str | None:
    """What the live view shows of an action while its deal is played: a declaration without its cards, and
    nothing of ``declare none`` (a seat keeping its declarations hidden: not public)."""
    if code == "declare none":
        return None
    return "declare" if code.startswith("declare ") else code


@pytest.mark.timeout(180)
def test_a_duplicate_matchs_live_stream_is_the_records_public_part_board_by_board(r, tmp_path) -> None:
    reg = Registry(r)
    h, rnd = _register(reg, "heuristic", "heuristic"), _register(reg, "random", "random")
    runner = ArenaRunner(reg, log_dir=tmp_path, startup_timeout_s=60)
    try:
        result = runner(MatchSpec("m-live-dup", "lad", "pilotta", 5, (h, rnd), deals=3))
    finally:
        runner.close()
    assert result.forfeit is None
    events = [json.loads(f["e"]) for _id, f in r.xrange(keys.live("m-live-dup"))]
    record = json.loads(result.record)
    legs = record["legs"]
    assert len(legs) == 2 and all(len(leg["deals"]) == 3 for leg in legs)
    # Expected, from the record alone: the start; then per board, table 1's actions and score, table 2's; the end.
    expected: list[dict[str, object]] = [
        {
            "kind": "start",
            "ruleset": "pilotta",
            "duplicate": True,
            "players": [["heuristic", "random", "heuristic", "random"], ["random", "heuristic", "random", "heuristic"]],
        }
    ]
    for board in range(3):
        for li, leg in enumerate(legs):
            deal = leg["deals"][board]
            for a in deal["actions"]:
                if _public(a["action"]) is None:
                    continue
                expected.append(
                    {"kind": "action", "leg": li, "deal": board, "seat": a["seat"], "action": _public(a["action"])}
                )
            declared = [
                {"seat": a["seat"], "code": a["action"].removeprefix("declare ")}
                for a in deal["actions"]
                if a["action"].startswith("declare ") and a["action"] != "declare none"
            ]
            expected.append(
                {
                    "kind": "deal",
                    "leg": li,
                    "deal": board,
                    "written": deal["score"]["written"],
                    "totals": deal["totals"],
                    "thrown_in": bool(deal["thrown_in"]),
                    "declarations": declared,
                }
            )
    expected.append({"kind": "end"})
    assert events == expected
    # No card in it but those played (a declared card is played too): never a hand.
    played = {
        a["action"].split()[1]
        for leg in legs
        for d in leg["deals"]
        for a in d["actions"]
        if a["action"].startswith("play ")
    }
    assert set(CARD.findall(json.dumps(events))) <= played
    assert r.ttl(keys.live("m-live-dup")) > 0  # the worker drops it once recorded (test_web_live_browser)
