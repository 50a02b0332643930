"""referee.match.wire: what goes on the wire is the seat's observation, all of it, and nothing more."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

import pilotta_bot
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pilotta.arena.v1 import bot_pb2, bot_pb2_grpc
from pilotta_bot.observation import observation_from_proto

from referee.cards import card_name, cards_in
from referee.deal import Deal
from referee.game import Game
from referee.match import wire
from referee.observation import Observation, observe
from referee.rules import get_ruleset


def random_states(seed: int, games: int = 3) -> Iterator[tuple[Game, Deal]]:
    """Every state of a few Pilotta games played with random legal actions."""
    rng = random.Random(seed)
    for g in range(games):
        game = Game(get_ruleset("pilotta"), seed * 100 + g, max_deals=2)
        while not game.over:
            yield game, game.deal
            game.apply(rng.choice(game.legal_actions()))
        yield game, game.deals[-1]


def cards_outside_announcements(message: bot_pb2.Observation) -> set[str]:
    found = set(message.hand) | set(message.trick.cards)
    if message.HasField("turned_card"):
        found.add(message.turned_card)
    for t in message.tricks:
        found |= set(t.cards)
    for d in message.own_declarations:
        found |= set(d.cards)
    return found


@pytest.mark.timeout(120)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_observation_never_shows_another_seats_unplayed_cards(seed: int) -> None:
    states = 0
    for game, deal in random_states(seed):
        for seat in range(4):
            message = wire.observation_to_proto(observe(deal, seat, game))
            # Serialize and parse: what a bot receives, byte for byte.
            message = bot_pb2.Observation.FromString(message.SerializeToString())
            for other in range(4):
                if other == seat:
                    continue
                secret = {card_name(c) for c in cards_in(deal.hands[other])}
                leaked = secret & cards_outside_announcements(message)
                assert not leaked, f"seat {seat} sees seat {other}'s unplayed {sorted(leaked)}"
                for a in message.announcements:
                    shown = secret & set(a.cards)
                    # Only a declaration that won the contest is shown, and only once it is settled.
                    assert not shown or (a.seat == other and a.HasField("credited") and a.credited), (
                        f"seat {seat} sees {sorted(shown)} of seat {other} in an unsettled announcement"
                    )
            assert list(message.hand) == [card_name(c) for c in cards_in(deal.hands[seat])]
        states += 1
    assert states > 100


def assert_same(obs: Observation, view: pilotta_bot.Observation) -> None:
    """The SDK's decoded view says exactly what the engine's observation says."""
    assert view.game == obs.ruleset
    assert (view.seat, view.dealer, view.phase, view.to_act) == (obs.seat, obs.dealer, obs.phase, obs.to_act)
    assert list(view.hand) == [card_name(c) for c in obs.hand]
    assert [(c.seat, c.action) for c in view.auction] == list(obs.auction)
    if obs.contract is None:
        assert view.contract is None
    else:
        assert view.contract == pilotta_bot.Contract(
            obs.contract.bidder, obs.contract.value, obs.contract.strain.code, obs.contract.multiplier
        )
    assert view.turned_card == (None if obs.turned_card is None else card_name(obs.turned_card))
    assert (view.trick.leader, list(view.trick.cards), view.trick.winner) == (
        obs.trick.leader,
        [card_name(c) for c in obs.trick.cards],
        obs.trick.winner,
    )
    assert [(t.leader, [*t.cards], t.winner) for t in view.tricks] == [
        (t.leader, [card_name(c) for c in t.cards], t.winner) for t in obs.tricks
    ]
    assert [(d.code, d.kind, d.points, list(d.cards)) for d in view.own_declarations] == [
        (d.code, d.kind.value, d.points, [card_name(c) for c in d.cards]) for d in obs.own_declarations
    ]
    assert [(a.seat, a.kind, a.points, a.length, list(a.cards), a.credited) for a in view.announcements] == [
        (a.seat, a.kind, a.points, a.length, [card_name(c) for c in a.cards], a.credited) for a in obs.announcements
    ]
    assert [(b.seat, b.suit) for b in view.belotes] == [(s, "CDHS"[suit]) for s, suit in obs.belotes]
    assert view.tricks_won == obs.tricks_won
    assert view.scores == obs.scores
    assert (view.deal_number, view.target, view.hanging) == (obs.deal_number, obs.target, obs.hanging)


@pytest.mark.timeout(120)
def test_round_trip_of_every_field_through_the_sdk() -> None:
    checked = 0
    for game, deal in random_states(11, games=2):
        for seat in range(4):
            obs = observe(deal, seat, game)
            data = wire.observation_to_proto(obs).SerializeToString()
            assert_same(obs, pilotta_bot.observation_from_proto(bot_pb2.Observation.FromString(data)))
            checked += 1
    assert checked > 400


class Recorder:
    """A bot that keeps what it was sent and answers the last legal action."""

    name = "recorder"

    def __init__(self) -> None:
        self.seen: list[tuple[pilotta_bot.Observation, list[str]]] = []

    def decide(self, obs: pilotta_bot.Observation, legal: list[str]) -> str:
        self.seen.append((obs, legal))
        return legal[-1]


@pytest.mark.timeout(60)
def test_decide_request_round_trip_over_grpc(
    serve_bot: Callable[[pilotta_bot.BotLike], pilotta_bot.RunningBot], bot_stub: Callable[[str], bot_pb2_grpc.BotStub]
) -> None:
    recorder = Recorder()
    stub = bot_stub(serve_bot(recorder).address)
    rng = random.Random(5)
    asked = 0
    for game, deal in random_states(21, games=1):
        if deal.is_over or rng.random() < 0.6:
            continue
        seat = deal.to_act
        obs = observe(deal, seat, game)
        legal = wire.legal_codes(deal)
        request = wire.decide_request("m-1", obs, legal, deadline_ms=1000, time_bank_ms=10_000)
        reply = stub.Decide(request, timeout=5)
        assert wire.chosen_action(reply, legal) == legal[-1]
        view, got_legal = recorder.seen[-1]
        assert got_legal == legal
        assert (view.match_id, view.deadline_ms, view.time_bank_ms) == ("m-1", 1000, 10_000)
        assert_same(obs, view)
        asked += 1
    assert asked > 20


def test_decide_request_refuses_the_wrong_seat_and_no_actions() -> None:
    game = Game(get_ruleset("pilotta"), 3)
    deal = game.deal
    other = (deal.to_act + 1) % 4
    with pytest.raises(ValueError, match="turn"):
        wire.decide_request("m", observe(deal, other, game), wire.legal_codes(deal), deadline_ms=1, time_bank_ms=1)
    with pytest.raises(ValueError, match="at least one"):
        wire.decide_request("m", observe(deal, deal.to_act, game), [], deadline_ms=1, time_bank_ms=1)


LEGAL = ["pass", "bid 80 H", "bid 80 S"]


@given(
    st.one_of(
        st.builds(lambda i: bot_pb2.DecideReply(index=i), st.integers(0, 2)),
        st.sampled_from(LEGAL).map(lambda c: bot_pb2.DecideReply(action=f"  {c.upper()} ")),
    )
)
@settings(max_examples=30, deadline=None)
def test_chosen_action_accepts_indexes_and_sloppy_codes(reply: bot_pb2.DecideReply) -> None:
    assert wire.chosen_action(reply, LEGAL) in LEGAL


def test_chosen_action_names_the_fault() -> None:
    with pytest.raises(wire.MalformedReplyError, match="names no action") as empty:
        wire.chosen_action(bot_pb2.DecideReply(), LEGAL)
    assert empty.value.outcome == "malformed_reply"
    with pytest.raises(wire.MalformedReplyError, match="out of range"):
        wire.chosen_action(bot_pb2.DecideReply(index=3), LEGAL)
    with pytest.raises(wire.MalformedReplyError, match="not a legal action") as bad:
        wire.chosen_action(bot_pb2.DecideReply(action="bid 90 H"), LEGAL)
    assert bad.value.outcome == "illegal_action"


def test_reply_comment_is_cut_at_a_character_boundary() -> None:
    assert wire.reply_comment(bot_pb2.DecideReply(comment="é" * 150)) == "é" * 100


def test_deal_end_notice_reveals_hands_only_after_the_deal() -> None:
    rng = random.Random(2)
    game = Game(get_ruleset("pilotta"), 8, max_deals=1)
    deal = game.deal
    with pytest.raises(ValueError, match="scored deal"):
        wire.deal_end_notice(deal, "m", 0, game.scores)
    while not game.over:
        game.apply(rng.choice(game.legal_actions()))
    deal = game.deals[-1]
    notice = wire.deal_end_notice(deal, "m", len(game.deals) - 1, game.scores)
    hands = [notice.south_hand, notice.east_hand, notice.north_hand, notice.west_hand]
    assert sorted(c for h in hands for c in h) == sorted(card_name(c) for c in range(32))
    assert deal.score is not None
    assert list(notice.written) == deal.score.written and list(notice.scores) == game.scores
    result = pilotta_bot.observation.deal_result_from_proto(notice)
    assert result.score["written"] == deal.score.written


def test_enums_agree_with_engine_numbers() -> None:
    assert [wire.seat_to_proto(s) for s in range(4)] == [bot_pb2.SOUTH, bot_pb2.EAST, bot_pb2.NORTH, bot_pb2.WEST]
    assert wire.phase_to_proto("play") == bot_pb2.PLAY
    with pytest.raises(ValueError):
        wire.seat_to_proto(4)


def test_the_handshake_offers_both_versions_and_reads_either_ruleset_field() -> None:
    request = wire.handshake_request("tests")
    # A version 1 bot reads only protocol_version: it sees 1, as from a referee before version 2.
    assert request.protocol_version == 1 and list(request.protocol_versions) == [1, 2]
    assert list(wire.handshake_request("tests", (1,)).protocol_versions) == [1]
    old = bot_pb2.HandshakeReply(games=["pilotta", "bela"])  # a bot that knows only the deprecated name
    new = bot_pb2.HandshakeReply(protocol_version=2, rulesets=["coinche"])
    both = bot_pb2.HandshakeReply(protocol_version=2, rulesets=["coinche", "bela"], games=["bela", "pilotta"])
    assert wire.handshake_rulesets(old) == ["pilotta", "bela"] and wire.reply_protocol_version(old) == 1
    assert wire.handshake_rulesets(new) == ["coinche"] and wire.reply_protocol_version(new) == 2
    assert wire.handshake_rulesets(both) == ["coinche", "bela", "pilotta"]


def test_the_ruleset_travels_in_both_fields_and_the_sdk_reads_either() -> None:
    game = Game(get_ruleset("bela"), 3)
    message = wire.observation_to_proto(observe(game.deal, 0, game))
    assert message.ruleset == message.game == "bela"
    start = wire.match_start_notice("m", "bela", {}, 0, ["a"] * 4, deadline_ms=1, time_bank_ms=1)
    assert start.ruleset == start.game == "bela"
    assert observation_from_proto(bot_pb2.Observation(game="bela")).ruleset == "bela"  # an older referee
    assert observation_from_proto(bot_pb2.Observation(ruleset="bela")).game == "bela"  # a newer one
