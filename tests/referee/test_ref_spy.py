"""A spy bot keeps every observation it is sent; the test rebuilds the true deals from the seed and checks
that a seat never sees a card it should not (another seat's unplayed card, unless a credited declaration
showed it) and that what it sees of itself is true."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pilotta.arena.v1 import bot_pb2

from referee.actions import parse_action
from referee.cards import card_name, cards_in
from referee.game import Game
from referee.match import MatchSettings, run_match
from referee.rules import get_ruleset


def cards_seen(obs: bot_pb2.Observation) -> set[str]:
    seen = set(obs.hand) | set(obs.trick.cards)
    for t in obs.tricks:
        seen |= set(t.cards)
    for d in obs.own_declarations:
        seen |= set(d.cards)
    for a in obs.announcements:
        seen |= set(a.cards)
    if obs.HasField("turned_card"):
        seen.add(obs.turned_card)
    return seen


@pytest.mark.timeout(120)
@pytest.mark.parametrize("seed", [3, 8])
def test_spy_never_sees_a_hidden_card(start_bot: Callable[..., tuple[str, Any]], seed: int) -> None:
    spied: list[bot_pb2.DecideRequest] = []
    spy, _ = start_bot("random", seed=seed, spy=spied)
    other, _ = start_bot("random", seed=seed + 100)
    out = run_match([spy, other], MatchSettings(seed=seed, deals=6), f"spy-{seed}")
    assert out.forfeit is None and spied
    # Replay the game from the seed alone, with the actions the record says were taken.
    game = Game(get_ruleset("pilotta"), seed, max_deals=6, to_target=False)  # six deals: no target ends them
    requests = iter(spied)
    checked = 0
    for deal_json in out.record["legs"][0]["deals"]:
        for entry in deal_json["actions"]:
            deal, seat = game.deal, game.deal.to_act
            assert entry["seat"] == seat
            if seat % 2 == 0:  # the spy's seats
                request = next(requests)
                obs = request.observation
                assert obs.seat == seat
                own_now = {card_name(c) for c in cards_in(deal.hands[seat])}
                assert set(obs.hand) == own_now, "the hand sent is not the seat's true hand"
                allowed = {card_name(c) for c in cards_in(deal.dealt[seat])}
                allowed |= {card_name(c) for t in deal.tricks for c in t.cards}
                allowed |= {card_name(c) for c in deal.trick}
                if deal.declarations_settled:
                    allowed |= {card_name(c) for side in deal.credited for d in side for c in d.cards}
                hidden = cards_seen(obs) - allowed
                assert not hidden, f"seat {seat} was shown {sorted(hidden)} in deal {deal_json['number']}"
                true_legal = [deal.code(a, seat) for a in deal.legal_actions()]
                assert list(request.legal_actions) == true_legal
                checked += 1
            game.apply(parse_action(entry["action"], deal.declaration_codes[seat]))
    assert next(requests, None) is None, "the spy was asked more often than its seats acted"
    assert checked == len(spied) > 20
