"""The sample bots over real gRPC answer legal codes in many game states, and the heuristic beats the uniform
bot (which reaches every call, contra and surcontra included, where the random bot bids only with cause)."""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

import grpc
import pilotta_bot
import pytest
from pilotta.arena.v1 import bot_pb2, bot_pb2_grpc
from protocol_duel import duel, play_deal
from protocol_helpers import free_port, referee_messages, start_on_any_port, start_process, stop_process

from referee.game import Game
from referee.match import wire
from referee.observation import observe
from referee.rules import get_ruleset, ruleset_names
from sample_bots.heuristic import HeuristicBot
from sample_bots.uniform import UniformBot


def ask_through_games(stub: bot_pb2_grpc.BotStub, seed: int, games: int, game_name: str = "pilotta") -> int:
    """Play games where the bot over gRPC chooses every action; return how many decisions it made."""
    rng = random.Random(seed)
    decisions = 0
    for g in range(games):
        game = Game(get_ruleset(game_name), seed * 1000 + g, max_deals=2)
        while not game.over:
            deal = game.deal
            seat = deal.to_act
            legal = wire.legal_codes(deal)
            request = wire.decide_request(
                f"m-{g}", observe(deal, seat, game), legal, deadline_ms=1000, time_bank_ms=10_000
            )
            reply = stub.Decide(request, timeout=5)
            chosen = wire.chosen_action(reply, legal)  # raises when not legal
            # Also wander off the bot's own line sometimes, to reach states it would not choose.
            if rng.random() < 0.2:
                chosen = rng.choice(legal)
            game.apply(deal.legal_actions()[legal.index(chosen)])
            decisions += 1
    return decisions


@pytest.mark.timeout(120)
@pytest.mark.parametrize("bot", ["uniform", "random", "heuristic"])
def test_sample_bots_answer_legal_codes_over_grpc(sample_bot_addresses: dict[str, str], bot: str) -> None:
    with grpc.insecure_channel(sample_bot_addresses[bot]) as channel:
        stub = bot_pb2_grpc.BotStub(channel)
        hello = stub.Handshake(wire.handshake_request("tests"), timeout=5)
        # Offered both versions, the SDK speaks version 2 (the decisions below are its version 1 calls,
        # which it still serves).
        assert hello.protocol_version == 2 and "pilotta" in hello.games and "pilotta" in hello.rulesets
        # The uniform bot bids wildly, so its games can end early on the target: count decisions, not deals.
        assert ask_through_games(stub, seed=3, games=6) > 200


@pytest.mark.timeout(120)
@pytest.mark.parametrize("game_name", ruleset_names())
def test_heuristic_answers_legal_codes_in_every_registered_game(game_name: str) -> None:
    # In-process (the SDK's decoder included): every ruleset's bids, declarations and belote codes.
    rng = random.Random(4)
    ruleset = get_ruleset(game_name)
    # Uniform opponents: they bid anything, double and redouble, so the heuristic meets every call.
    bots = [HeuristicBot(), UniformBot(1), HeuristicBot(), UniformBot(2)]
    for _ in range(25):
        cards = list(range(32))
        rng.shuffle(cards)
        play_deal(ruleset.new_deal(rng.randrange(4), tuple(cards)), bots)  # type: ignore[arg-type]


@pytest.mark.timeout(120)
def test_heuristic_beats_uniform_clearly_on_duplicate_deals() -> None:
    result = duel(HeuristicBot(), UniformBot(9), decks=40, seed=2024)
    heuristic, rand = result.points
    print(
        f"heuristic {heuristic} vs uniform {rand} over {result.deals} deals; contracts made "
        f"{result.contracts_made} of {result.contracts_played}"
    )
    assert result.deals == 80
    assert heuristic > 3 * max(rand, 1) and heuristic - rand > 80 * 100


class CardsAtRandom(HeuristicBot):
    """The heuristic's bidding with random card play: isolates the value of the heuristic's play."""

    def __init__(self) -> None:
        self.rng = random.Random(5)

    def play(self, obs: pilotta_bot.Observation, legal: list[str]) -> str:
        return self.rng.choice(legal)


@pytest.mark.slow  # make check leaves it to make test
@pytest.mark.timeout(120)
def test_heuristic_card_play_beats_random_card_play() -> None:
    result = duel(HeuristicBot(), CardsAtRandom(), decks=40, seed=7)
    heuristic, other = result.points
    print(f"heuristic {heuristic} vs random play {other} over {result.deals} deals")
    assert heuristic > 1.2 * other


@pytest.mark.timeout(180)
def test_node_bot_handshake_and_decisions_over_grpc(node_bot_dir: Path) -> None:
    process, port = start_on_any_port(["node", "bot.js", "--port", "0"], node_bot_dir)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = bot_pb2_grpc.BotStub(channel)
            hello = stub.Handshake(wire.handshake_request("tests"), timeout=5)
            assert hello.name == "node-simple" and hello.protocol_version == 2 and "pilotta" in hello.rulesets
            only_1 = stub.Handshake(wire.handshake_request("tests", (1,)), timeout=5)
            assert only_1.protocol_version == 1 and "pilotta" in only_1.games
            stub.MatchStarted(
                bot_pb2.MatchStart(match_id="n", game="pilotta", seat=bot_pb2.SOUTH, bots=["node"] * 4), timeout=5
            )
            assert ask_through_games(stub, seed=8, games=2) > 100
            stub.DealEnded(bot_pb2.DealEnd(match_id="n"), timeout=5)
            stub.MatchEnded(bot_pb2.MatchEnd(match_id="n", scores=[1, 2]), timeout=5)
            # Version 2: one answer per decision, naming it; nothing for the notices. With only the jack of
            # hearts, the bot values hearts at 30 + 25 - 25 (a single trump) = 30 against the 95 * 1 / 8 = 12
            # it asks of one card for a bid without a number: it bids.
            answers = list(stub.Play(iter(referee_messages()), timeout=10))
            assert [(a.decision_id, a.reply.action, a.error) for a in answers] == [(1, "bid H", ""), (2, "play JH", "")]
    finally:
        assert stop_process(process) == 0


def test_node_bot_refuses_a_missing_port(node_bot_dir: Path) -> None:
    result = subprocess.run(
        ["node", "bot.js"],
        cwd=node_bot_dir,
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": os.environ["PATH"]},
    )
    assert result.returncode == 2 and "--port" in result.stderr


@pytest.mark.slow  # make check leaves it to make test
@pytest.mark.timeout(900)  # the first run compiles the bot
def test_cpp_bot_handshake_and_decisions_over_grpc_in_both_versions(cpp_bot_dir: Path) -> None:
    port = free_port()
    process = start_process(["build/pilotta-cpp-bot", "--port", str(port), "--seed", "3"], cpp_bot_dir, port)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = bot_pb2_grpc.BotStub(channel)
            hello = stub.Handshake(wire.handshake_request("tests"), timeout=5)
            assert (hello.name, hello.protocol_version) == ("cpp-random", 2)
            assert sorted(hello.rulesets) == sorted(hello.games) == sorted(ruleset_names())
            only_1 = stub.Handshake(wire.handshake_request("tests", (1,)), timeout=5)
            assert only_1.protocol_version == 1
            stub.MatchStarted(bot_pb2.MatchStart(match_id="c", ruleset="pilotta", seat=bot_pb2.EAST), timeout=5)
            # Random bids wildly, so its games can end early on the target: count decisions, not deals.
            assert ask_through_games(stub, seed=9, games=4) > 100
            stub.DealEnded(bot_pb2.DealEnd(match_id="c"), timeout=5)
            stub.MatchEnded(bot_pb2.MatchEnd(match_id="c", scores=[1, 2]), timeout=5)
            with pytest.raises(grpc.RpcError) as e:  # nothing legal to choose from: an error, not a made-up code
                stub.Decide(bot_pb2.DecideRequest(match_id="c"), timeout=5)
            assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "no legal action" in e.value.details()
            # Version 2: one answer per decision, naming it, none for the notices; a decision with one
            # legal action can only be answered with it.
            answers = list(stub.Play(iter(referee_messages()), timeout=10))
            assert [(a.decision_id, a.error) for a in answers] == [(1, ""), (2, "")]
            assert answers[0].reply.action in ("pass", "bid H") and answers[1].reply.action == "play JH"
    finally:
        assert stop_process(process) == 0  # SIGTERM: a clean stop


def test_cpp_bot_kept_on_version_1_by_its_environment(cpp_bot_dir: Path) -> None:
    port = free_port()
    command = ["build/pilotta-cpp-bot", "--port", str(port)]
    process = start_process(command, cpp_bot_dir, port, env={"PILOTTA_BOT_PROTOCOL": "1"})
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            hello = bot_pb2_grpc.BotStub(channel).Handshake(wire.handshake_request("tests"), timeout=5)
            assert hello.protocol_version == 1  # offered [1, 2]
    finally:
        assert stop_process(process) == 0


def test_cpp_bot_refuses_a_missing_port(cpp_bot_dir: Path) -> None:
    result = subprocess.run(
        ["build/pilotta-cpp-bot", "--seed", "x"], cwd=cpp_bot_dir, capture_output=True, text=True, timeout=30, env={}
    )
    assert result.returncode == 2 and "--seed must be a non-negative integer, not x" in result.stderr
    result = subprocess.run(
        ["build/pilotta-cpp-bot"], cwd=cpp_bot_dir, capture_output=True, text=True, timeout=30, env={}
    )
    assert result.returncode == 2 and "--port N" in result.stderr
