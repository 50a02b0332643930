"""The match runner's fast path says exactly what the protobuf runtime says.

``observe`` keeps the public part of a deal's observations between calls and ``wire_bytes.decide_request_bytes``
writes the request's bytes directly; both must give, state by state, what the plain computations give:
the same Observation as a from-scratch reading of the deal, the very bytes ``SerializeToString`` writes.
``wire_bytes.DecisionWriter`` (what the match runner sends) goes from the deal to the bytes without an
Observation: its bytes must be the runtime's bytes of the from-scratch Observation, for every seat.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pilotta.arena.v1 import bot_pb2

from referee.actions import Strain
from referee.cards import Card, cards_in
from referee.deal import Contract, Deal, Phase
from referee.game import Game
from referee.match import wire, wire_bytes
from referee.observation import AnnouncementView, Observation, ObservationCache, TrickView, observe
from referee.rules import get_ruleset
from referee.rules.registry import ruleset_names


def reference_observe(deal: Deal, seat: int, game: Game | None = None) -> Observation:
    """``observe`` as it was before its caches: everything read from the deal afresh."""
    credited = {id(d) for side in deal.credited for d in side}
    announcements = []
    for s in range(4):
        for d in deal.announced[s]:
            shown = s == seat or (deal.declarations_settled and id(d) in credited)
            announcements.append(
                AnnouncementView(
                    s,
                    d.kind.value,
                    d.points,
                    d.length,
                    d.cards if shown else (),
                    (id(d) in credited) if deal.declarations_settled else None,
                )
            )
    playing = deal.phase is Phase.PLAY
    return Observation(
        ruleset=deal.ruleset.name,
        seat=seat,
        dealer=deal.dealer,
        phase=deal.phase.value,
        to_act=None if deal.phase is Phase.SCORED else deal.to_act,
        hand=tuple(cards_in(deal.hands[seat])),
        auction=tuple((s, deal.code(a, s)) for s, a in deal.auction),
        contract=deal.contract,
        turned_card=deal.turned_card,
        trick=TrickView(deal.leader, tuple(deal.trick), None) if playing else TrickView(deal.leader, (), None),
        tricks=tuple(TrickView(t.leader, t.cards, t.winner) for t in deal.tricks),
        own_declarations=deal.declarations[seat],
        announcements=tuple(announcements),
        belotes=tuple((b.seat, b.suit) for b in deal.belotes),
        tricks_won=(deal.tricks_won[0], deal.tricks_won[1]),
        scores=(game.scores[0], game.scores[1]) if game is not None else (0, 0),
        deal_number=(len(game.deals) - 1) if game is not None else 0,
        target=deal.ruleset.target,
        hanging=game.hanging if game is not None else 0,
    )


FIELDS = [f.name for f in dataclasses.fields(Observation)]


def played_states(name: str, seed: int, deals: int = 3) -> Iterator[tuple[Game, Deal]]:
    rng = random.Random(seed)
    game = Game(get_ruleset(name), seed, max_deals=deals)
    while not game.over:
        yield game, game.deal
        game.apply(rng.choice(game.legal_actions()))
    yield game, game.deals[-1]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", ruleset_names())
def test_cached_observe_and_direct_bytes_agree_with_the_runtime(name: str) -> None:
    states = 0
    for seed in (1, 2, 3, 4):
        cache = ObservationCache()  # one per game, as the match runner keeps one per match
        for game, deal in played_states(name, seed):
            order = list(range(4))
            random.Random(states).shuffle(order)  # the cache must not depend on who asks first
            for seat in order:
                obs = observe(deal, seat, game, cache)
                assert obs == reference_observe(deal, seat, game)
                assert type(obs) is Observation and list(vars(obs)) == FIELDS
                assert type(obs.trick) is TrickView and list(vars(obs.trick)) == ["leader", "cards", "winner"]
                assert hash(obs) == hash(reference_observe(deal, seat, game))
                assert observe(deal, seat, game, cache) == obs  # asked twice in one state
                expected = wire.observation_to_proto(obs).SerializeToString()
                assert wire_bytes.observation_bytes(obs, cache) == expected
                assert wire_bytes.observation_bytes(obs) == expected  # and without the cache
                assert observe(deal, seat) == reference_observe(deal, seat)
            if not deal.is_over:
                seat = deal.to_act
                obs = observe(deal, seat, game, cache)
                legal = cache.legal_codes(deal.legal_actions(), deal.declaration_codes[seat])
                assert list(legal) == wire.legal_codes(deal)
                for deadline, bank in ((1000, 10_000), (0, 0), (-5, 123_456_789)):
                    assert (
                        wire_bytes.decide_request_bytes(
                            f"m-{name}-{seed}", obs, legal, deadline_ms=deadline, time_bank_ms=bank, cache=cache
                        )
                        == wire.decide_request(
                            f"m-{name}-{seed}", obs, legal, deadline_ms=deadline, time_bank_ms=bank
                        ).SerializeToString()
                    )
            states += 1
    assert states > 100


def test_observe_follows_a_cloned_deal_separately() -> None:
    rng = random.Random(4)
    game = Game(get_ruleset("pilotta"), 4)
    for _ in range(12):
        game.apply(rng.choice(game.legal_actions()))
    deal = game.deal
    cache = ObservationCache()
    before = observe(deal, 0, game, cache)
    twin = deal.clone()
    twin.apply(twin.legal_actions()[0])
    assert observe(twin, 0, None, cache) == reference_observe(twin, 0)
    assert observe(deal, 0, game, cache) == before == reference_observe(deal, 0, game)


def test_direct_bytes_of_edge_values() -> None:
    """Values a random game seldom reaches: negative totals, SOUTH everywhere, a lost contest, no game."""
    base = reference_observe(Game(get_ruleset("pilotta"), 1).deal, 0)
    variants = [
        dataclasses.replace(
            base, scores=(-7, 2**31 - 1), hanging=-300, tricks_won=(0, 0), deal_number=0, target=0, to_act=0, dealer=0
        ),
        dataclasses.replace(
            base,
            ruleset="",
            phase="scored",
            to_act=None,
            trick=TrickView(0, (), None),
            tricks=(TrickView(0, (Card(0), Card(31), Card(8), Card(9)), 0),),
            contract=Contract(0, 0, Strain.CLUBS, 1),
            turned_card=Card(0),
        ),
        dataclasses.replace(
            base,
            announcements=(
                AnnouncementView(0, "run", 20, 3, (), False),
                AnnouncementView(3, "four", 0, 0, (Card(1),), True),
                AnnouncementView(1, "", 50, 5, (), None),
            ),
            belotes=((0, 0), (3, 3)),
            auction=((0, "pass"), (1, ""), (2, "bid 90 H")),
            contract=Contract(2, 250, Strain.ALL_TRUMP, 4),
        ),
    ]
    for obs in variants:
        assert wire_bytes.observation_bytes(obs) == wire.observation_to_proto(obs).SerializeToString()
        legal = ["", "play 7C"]
        obs = dataclasses.replace(obs, to_act=obs.seat)
        assert (
            wire_bytes.decide_request_bytes("", obs, legal, deadline_ms=1, time_bank_ms=2**32 - 1)
            == wire.decide_request("", obs, legal, deadline_ms=1, time_bank_ms=2**32 - 1).SerializeToString()
        )
    obs = variants[0]
    assert bot_pb2.Observation.FromString(wire_bytes.observation_bytes(obs)).scores == [-7, 2**31 - 1]


def test_direct_bytes_refuse_what_the_runtime_refuses() -> None:
    base = dataclasses.replace(reference_observe(Game(get_ruleset("pilotta"), 1).deal, 0), to_act=None)
    for bad in (
        dataclasses.replace(base, seat=4),
        dataclasses.replace(base, phase="bidding"),
        dataclasses.replace(base, target=-1),
        dataclasses.replace(base, dealer=-1),
    ):
        with pytest.raises(ValueError):
            wire.observation_to_proto(bad)
        with pytest.raises(ValueError):
            wire_bytes.observation_bytes(bad)
    with pytest.raises(ValueError):
        wire_bytes.decide_request_bytes("m", base, [], deadline_ms=1, time_bank_ms=1)
    for runtime_refuses in (wire.decide_request, wire_bytes.decide_request_bytes):
        with pytest.raises(ValueError):
            runtime_refuses("m", base, ["pass"], deadline_ms=2**32 + 5, time_bank_ms=1)


# Option sets beside the defaults that change what an observation holds (more strains to bid, a
# turned-card-free auction's order of runs, contra inside the auction, a coinche that does not end it).
OPTIONS: dict[str, list[dict[str, object]]] = {
    "pilotta": [{}, {"no_trump_bids": True, "all_trump_bids": True, "run_order": "plain", "contra": "in_auction"}],
    "coinche": [{}, {"no_trump_bids": True, "all_trump_bids": True, "coinche_ends_auction": False}],
}


def runtime_request(match_id: str, deal: Deal, seat: int, game: Game | None, deadline: int, bank: int) -> bytes:
    obs = reference_observe(deal, seat, game)
    legal = wire.legal_codes(deal)
    return bytes(wire.decide_request(match_id, obs, legal, deadline_ms=deadline, time_bank_ms=bank).SerializeToString())


@settings(max_examples=40, deadline=None)
@given(
    name=st.sampled_from(ruleset_names()),
    option_set=st.integers(0, 1),
    seed=st.integers(0, 2**32),
    order_seed=st.integers(0, 2**16),
)
@pytest.mark.slow  # make check leaves it to make test
def test_decision_writer_writes_the_runtime_bytes_for_every_seat(
    name: str, option_set: int, seed: int, order_seed: int
) -> None:
    """Two legs of random play with one writer (as a match runner keeps one per match): at every state,
    every seat's observation (seats asked in a random order) and the acting seat's request are the runtime's
    bytes of the from-scratch observation."""
    sets = OPTIONS.get(name, [{}])
    ruleset = get_ruleset(name, sets[option_set % len(sets)])
    writer = wire_bytes.DecisionWriter(f"m-{name}-{seed}")
    order_rng, rng = random.Random(order_seed), random.Random(seed)
    for leg in range(2):
        game = Game(ruleset, seed + leg, max_deals=2)
        while True:
            deal = game.deal
            order = list(range(4))
            order_rng.shuffle(order)
            for seat in order:
                expected = wire.observation_to_proto(reference_observe(deal, seat, game)).SerializeToString()
                assert writer.observation(deal, seat, game) == expected, (deal.history, seat)
            if game.over:
                break
            actions = deal.legal_actions()
            seat = deal.to_act
            deadline, bank = rng.choice(((1000, 10_000), (0, 0), (-5, 123_456_789), (1, rng.randrange(20_000))))
            codes, request = writer.request(deal, seat, game, actions, deadline_ms=deadline, time_bank_ms=bank)
            assert list(codes) == wire.legal_codes(deal)
            assert request == runtime_request(f"m-{name}-{seed}", deal, seat, game, deadline, bank)
            game.apply(rng.choice(actions))


def test_decision_writer_follows_a_cloned_deal_and_no_game() -> None:
    rng = random.Random(4)
    game = Game(get_ruleset("bulgarian"), 4)
    for _ in range(14):
        game.apply(rng.choice(game.legal_actions()))
    deal = game.deal
    writer = wire_bytes.DecisionWriter("m")
    before = writer.observation(deal, 1, game)
    twin = deal.clone()
    twin.apply(twin.legal_actions()[0])
    assert writer.observation(twin, 1) == wire.observation_to_proto(reference_observe(twin, 1)).SerializeToString()
    assert writer.observation(deal, 1, game) == before
    assert before == wire.observation_to_proto(reference_observe(deal, 1, game)).SerializeToString()


def test_decision_writer_refuses_what_the_runtime_refuses() -> None:
    game = Game(get_ruleset("pilotta"), 1)
    deal = game.deal
    writer = wire_bytes.DecisionWriter("m")
    seat = deal.to_act
    with pytest.raises(ValueError, match="at least one legal action"):
        writer.request(deal, seat, game, [], deadline_ms=1, time_bank_ms=1)
    with pytest.raises(ValueError, match="turn"):
        writer.request(deal, (seat + 1) % 4, game, deal.legal_actions(), deadline_ms=1, time_bank_ms=1)
    with pytest.raises(ValueError):
        writer.request(deal, seat, game, deal.legal_actions(), deadline_ms=2**32 + 5, time_bank_ms=1)
    # The largest numbers a uint32 holds are written as the runtime writes them.
    _, request = writer.request(deal, seat, game, deal.legal_actions(), deadline_ms=1, time_bank_ms=2**32 - 1)
    assert request == runtime_request("m", deal, seat, game, 1, 2**32 - 1)


@settings(max_examples=15, deadline=None)
@given(name=st.sampled_from(ruleset_names()), seed=st.integers(0, 2**32), seat=st.integers(0, 3))
def test_sdk_stream_decoder_decodes_what_a_fresh_decode_does(name: str, seed: int, seat: int) -> None:
    """One seat's Play stream over a whole game (the seat's decisions, as the referee sends them): the SDK's
    StreamDecoder, decoding only what is new, gives the Observation a fresh decode gives; then a message
    that does not continue the stream (another game's deal of the same number) is decoded afresh."""
    from pilotta_bot.observation import StreamDecoder, observation_from_proto

    decoder = StreamDecoder()
    writer = wire_bytes.DecisionWriter("m")
    rng = random.Random(seed)
    game = Game(get_ruleset(name), seed, max_deals=2)
    asked = 0
    while not game.over:
        deal = game.deal
        if deal.to_act == seat:
            message = bot_pb2.Observation.FromString(writer.observation(deal, seat, game))
            assert observation_from_proto(message, decoder=decoder) == observation_from_proto(message)
            asked += 1
        game.apply(rng.choice(game.legal_actions()))
    assert asked > 0


def played_to(name: str, seed: int, tricks: int) -> Game | None:
    """A game of random play until its first deal has ``tricks`` finished tricks (None if it was thrown in)."""
    rng = random.Random(seed)
    game = Game(get_ruleset(name), seed, max_deals=1)
    while len(game.deal.tricks) < tricks:
        if len(game.deals) > 1 or game.over:
            return None
        game.apply(rng.choice(game.legal_actions()))
    return game


@pytest.mark.parametrize("name", ruleset_names())
def test_sdk_stream_decoder_decodes_afresh_what_does_not_continue_the_stream(name: str) -> None:
    """A message that does not continue the stream (another game's first deal, further on) is decoded
    afresh, not glued to what the decoder kept."""
    from pilotta_bot.observation import StreamDecoder, observation_from_proto

    pairs = 0
    for seed in range(12):
        a, b = played_to(name, seed, 1), played_to(name, seed + 100, 4)
        if a is None or b is None:
            continue
        decoder = StreamDecoder()
        for game in (a, b):
            message = bot_pb2.Observation.FromString(wire_bytes.DecisionWriter("m").observation(game.deal, 0, game))
            assert observation_from_proto(message, decoder=decoder) == observation_from_proto(message)
        pairs += 1
    assert pairs >= 3
