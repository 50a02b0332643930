"""Pilotta's contra window and its ruleset versions, each scenario worked out by hand.

000 "Reizen" 4-5: the auction ends when three players in a row pass; "Die Gegner können den Kontrakt vor
Spielbeginn ,contra' machen ... Die Ansager können ,Sur-Contra' (Rekontra) antworten". A Pilotta pass is
final (000 "Reizen" 3), so the README settles it: when the auction closes, the defenders in turn may say
contra, then the bidders may say surcontra, then play starts (docs/rules/pilotta.md). Contra as a call
inside the auction is the option ``contra="in_auction"``, which is also all that version 1 of the ruleset
knew; records written under version 1 replay under version 1's rules.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from referee.deal import Phase
from referee.errors import RecordError, RulesetError
from referee.record import verify_record
from referee.rules import get_ruleset
from rules.helpers import expect_illegal, legal_codes, new_deal, play

RECORDS = Path(__file__).parent / "records"

# Hands with no declaration and no king and queen of one suit in one hand (as in test_pilotta_auction.py).
PLAIN = {
    0: "7C 9C JC KC 8D TD QD AD",
    1: "8C TC QC AC 7D 9D JD KD",
    2: "7H 9H JH KH 8S TS QS AS",
    3: "8H TH QH AH 7S 9S JS KS",
}


def test_after_bid_and_three_passes_a_defender_may_say_contra() -> None:
    # Dealer 3: seat 0 bids 80 H; 1, 2, 3 pass: the auction is closed (000 Reizen 4), nobody may bid again.
    # The defenders in turn from the bidder's right: seat 1 first (though it passed in the auction), then 3.
    deal = new_deal("pilotta", PLAIN, dealer=3)
    play(deal, "bid 80 H", "pass", "pass", "pass")
    assert deal.phase is Phase.AUCTION and deal.contract is None
    assert deal.to_act == 1 and legal_codes(deal) == ["pass", "contra"]
    play(deal, "pass")
    assert deal.to_act == 3 and legal_codes(deal) == ["pass", "contra"]
    play(deal, "contra")
    # The bidders in turn from the contra's right: seat 0 (the bidder), then seat 2.
    assert deal.to_act == 0 and legal_codes(deal) == ["pass", "surcontra"]
    play(deal, "pass")
    assert deal.to_act == 2 and legal_codes(deal) == ["pass", "surcontra"]
    play(deal, "pass")
    assert deal.phase is Phase.PLAY and deal.contract is not None
    assert (deal.contract.bidder, deal.contract.value, deal.contract.multiplier) == (0, 80, 2)
    assert deal.to_act == 0  # 000 Spielablauf 1: the player after the dealer leads, whatever was said


def test_surcontra_starts_play_at_x4() -> None:
    deal = new_deal("pilotta", PLAIN, dealer=3)
    play(deal, "bid 80 H", "pass", "pass", "pass", "contra")  # seat 1 doubles at once
    assert deal.to_act == 2 and legal_codes(deal) == ["pass", "surcontra"]  # 1's right: 2, a bidder
    play(deal, "surcontra")
    assert deal.phase is Phase.PLAY and deal.contract is not None and deal.contract.multiplier == 4


def test_both_defenders_pass_play_at_x1() -> None:
    deal = new_deal("pilotta", PLAIN, dealer=3)
    play(deal, "bid 80 H", "pass", "pass", "pass", "pass", "pass")
    assert deal.phase is Phase.PLAY and deal.contract is not None and deal.contract.multiplier == 1


def test_window_order_follows_the_bidder_not_the_last_pass() -> None:
    # Dealer 0: 1 bids 80 H, 2 passes, 3 bids 90 S, 0 passes, 1 passes: 2, 0 and 1 are out, so the auction
    # closes on seat 1's pass with seat 3's 90 S. The defenders are 0 and 2: seat 0 (3's right) first.
    deal = new_deal("pilotta", PLAIN, dealer=0)
    play(deal, "bid 80 H", "pass", "bid 90 S", "pass", "pass")
    assert deal.to_act == 0 and legal_codes(deal) == ["pass", "contra"]
    play(deal, "pass")
    assert deal.to_act == 2
    play(deal, "contra")
    assert deal.to_act == 3 and legal_codes(deal) == ["pass", "surcontra"]  # 2's right: 3, the bidder
    play(deal, "pass")
    assert deal.to_act == 1
    play(deal, "surcontra")
    assert deal.contract is not None
    assert (deal.contract.bidder, deal.contract.value, deal.contract.multiplier) == (3, 90, 4)


def test_the_window_refuses_bids_and_the_wrong_side() -> None:
    deal = new_deal("pilotta", PLAIN, dealer=3)
    # No contra inside the auction by default: after a bid the next seat may pass or bid.
    play(deal, "bid 80 H")
    assert "contra" not in legal_codes(deal)
    err = expect_illegal(deal, "contra", "contra-after-auction")
    assert "once the auction is closed" in str(err)
    play(deal, "pass", "pass", "pass")
    err = expect_illegal(deal, "bid 90 H", "auction-closed")
    assert "closed" in str(err)
    expect_illegal(deal, "surcontra", "surcontra-without-contra")  # seat 1 is a defender, nothing to answer
    play(deal, "contra")
    expect_illegal(deal, "contra", "contra-by-bidders")  # seat 2 is a bidder
    expect_illegal(deal, "play 7H", "auction-in-progress")


def test_option_in_auction_has_no_window() -> None:
    # contra="in_auction" (002's way, version 1's only rule): contra is a call in the auction, and three
    # passes after the bid start play at once.
    deal = new_deal("pilotta", PLAIN, dealer=3, options={"contra": "in_auction"})
    play(deal, "bid 80 H")
    assert legal_codes(deal)[-1] == "contra"
    play(deal, "pass", "pass", "pass")
    assert deal.phase is Phase.PLAY and deal.contract is not None and deal.contract.multiplier == 1


def test_contra_option_is_validated() -> None:
    with pytest.raises(RulesetError, match="contra"):
        get_ruleset("pilotta", {"contra": "sometimes"})


# --- Versions ---------------------------------------------------------------------------------------------


def test_versions_of_pilotta() -> None:
    assert get_ruleset("pilotta").version == 3
    assert get_ruleset("pilotta", version=3).options_json()["contra"] == "after"
    assert get_ruleset("pilotta", version=2).options_json()["contra"] == "after"
    old = get_ruleset("pilotta", version=1)
    assert old.version == 1
    assert "contra" not in old.options_json()  # version 1 had no such option and does not write it
    assert old.contra_in_auction
    with pytest.raises(RulesetError, match="came with version 2"):
        get_ruleset("pilotta", {"contra": "after"}, version=1)
    with pytest.raises(RulesetError, match=r"no version 4 \(known: 1, 2, 3; current: 3\)"):
        get_ruleset("pilotta", version=4)
    with pytest.raises(RulesetError, match="no version"):
        get_ruleset("pilotta", version=0)


def test_version_1_plays_contra_inside_the_auction() -> None:
    deal = new_deal(get_ruleset("pilotta", version=1), PLAIN, dealer=3)
    play(deal, "bid 80 H", "contra", "pass", "pass", "pass")
    assert deal.phase is Phase.PLAY and deal.contract is not None and deal.contract.multiplier == 2


def _record(name: str) -> dict[str, Any]:
    data = json.loads((RECORDS / name).read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_a_version_1_record_of_main_still_verifies_under_version_1() -> None:
    # Written by main at 8b69abe (Pilotta version 1) with `play_random_game(get_ruleset("pilotta"), 2, 2)`:
    # its first deal has the call "bid 250 H, pass, pass, contra, pass", a contra inside the auction.
    record = _record("pilotta_v1_contra_in_auction.json")
    assert record["ruleset"]["version"] == 1 and "contra" not in record["ruleset"]["options"]
    verified = verify_record(record)
    assert verified.game.ruleset.version == verified.ruleset_version == 1  # the version it applied
    # `referee verify` says so too.
    run = subprocess.run(
        [sys.executable, "-m", "referee.cli", "verify", str(RECORDS / "pilotta_v1_contra_in_auction.json")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert "rules applied: pilotta version 1" in run.stdout
    assert verified.game.deals[0].contract is not None and verified.game.deals[0].contract.multiplier == 2
    # Under version 2's rules the same actions are not legal: the contra inside the auction is refused.
    record["ruleset"]["version"] = 2
    with pytest.raises(RecordError, match="contra"):
        verify_record(record)
    record["ruleset"]["version"] = 9
    with pytest.raises(RecordError, match="no version 9"):
        verify_record(record)
