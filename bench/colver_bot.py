"""colver's agents as a seat of our engine: the outside reference the PIMC bot is measured against.

colver (``pip install colver``, the optional ``bench`` extra; MIT) is a Coinche engine in Rust with its own
agents; the strongest search one is IS-DD ("Dede": each card play draws determinized worlds consistent with
what the seat has seen, solves each double dummy and plays the best card on average), bidding by colver's
best rule bidder ("improved"; its NN bidders need weights from the Hugging Face Hub, which this machine
cannot reach). colver plays whole environments, not observations, so each decision here:

1. deals an environment of colver's from the seat's observation: the seat's own eight cards as dealt, and
   the other seats' from one world consistent with the observation (during the play, a draw of the PIMC
   bot's exact sampler: every card played was legal in it, so colver accepts the play; in the auction, a
   uniform deal of the 24 unseen cards);
2. replays into it every call and card of the deal so far, shown to a fresh ``colver.Agent`` of the seat
   (``observe`` before each step, as colver's own arena does);
3. asks the agent, and translates its action back to one of our legal codes.

What this gives or takes from colver, so that the figures are read right:

* colver never sees a hidden card: the environment's other hands are a sampled world, not the deal, and
  its IS-DD draws its own worlds from the seat's view of the replayed actions;
* it plays under the project's Coinche with the options closest to its own rules (``COLVER_OPTIONS``: no
  duty to undertrump, contra and surcontra multiplying the bid alone), but it values its choices by its own
  scoring: no declarations, a surcontra worth three times rather than four, no rounding, 162 + the bid to
  the defence on a failed contract; the engine scores ours;
* declarations do not exist for colver: it declares as the project's heuristic bot does (``HeuristicBot``,
  which announces what it holds), and it announces every belote it may (colver counts belote always);
* a call colver makes that our rules refuse (none was seen; it would be a bid after a contra, which ends our
  auction) is replaced by pass, and counted in ``corrections``.

Its CPU time is its deciding thread's (``cpu_clock``), as any bot's here: colver solves on a thread pool, which
``RAYON_NUM_THREADS=1`` (set here before colver is loaded) keeps to the calling thread, so its time per
decision is comparable with a bot of one thread. colver has no time limit: a first lead with its 20 worlds
took it about a second of CPU and up to ten, where the PIMC bot plans within 850 ms.
"""

from __future__ import annotations

import os
import random
import time
from typing import Any

import pilotta_bot

from referee.cards import card_name, parse_card
from sample_bots.heuristic.bot import HeuristicBot
from sample_bots.pimc.sampler import Sampler, Seen

# The project's Coinche options closest to colver's rules (colver's README, "Rules"; its solver agreed with the
# C kernel's values on every position tried under these, bench_pimc.py kernels).
COLVER_OPTIONS: dict[str, object] = {"must_undertrump": False, "multiply": "bid"}
# colver's bot spec (its TOML) of the IS-DD agent: the rule bidder, worlds drawn uniformly under the hard facts.
DEDE_SPEC = """\
[bid]
strategy = "improved"
[play]
method = "isdd"
determinizations = {worlds}
[worlds]
source = "uniform"
"""
SUITS = "SHDC"  # colver's suit order: ♠ ♥ ♦ ♣
PASS, COINCHE, SURCOINCHE = 0, 41, 42


def colver_module() -> Any:
    """colver, loaded single-threaded; None when it is not installed."""
    os.environ["RAYON_NUM_THREADS"] = "1"  # (read when colver's pool starts: at its first search)
    try:
        import colver  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    return colver


def card_numbers(colver: Any) -> dict[int, int]:
    """Our card numbers to colver's (suits ♠♥♦♣, ranks 7 8 9 J Q K 10 A), matched by name: ``parse_card``
    reads colver's names ("10♥") as they are."""
    return {int(parse_card(colver.Env.card_name(i))): i for i in range(32)}


def call_action(code: str) -> int:
    """One of our Coinche calls as colver's auction action (0 pass, 1..36 the bids 80..160 by suit, 37..40
    capot, 41 coinche, 42 surcoinche)."""
    words = code.split()
    if words[0] == "pass":
        return PASS
    if words[0] == "contra":
        return COINCHE
    if words[0] == "surcontra":
        return SURCOINCHE
    if words[0] == "bid" and words[2] in SUITS:
        value, suit = int(words[1]), SUITS.index(words[2])
        if value == 250:  # our capot bid (docs/rules/coinche.md)
            return 37 + suit
        if 80 <= value <= 160 and value % 10 == 0:
            return 1 + (value - 80) // 10 * 4 + suit
    raise ValueError(f"colver has no call for {code!r}")


def call_code(action: int) -> str:
    """colver's auction action as our call's code (the inverse of ``call_action``)."""
    if action == PASS:
        return "pass"
    if action == COINCHE:
        return "contra"
    if action == SURCOINCHE:
        return "surcontra"
    if 37 <= action <= 40:
        return f"bid 250 {SUITS[action - 37]}"
    if 1 <= action <= 36:
        return f"bid {80 + (action - 1) // 4 * 10} {SUITS[(action - 1) % 4]}"
    raise ValueError(f"colver action {action} is not a call")


class ColverBot:
    """colver's IS-DD agent (``worlds`` determinizations a card play, colver's rule bidder) seated at our
    Coinche table through its observation. See the module's docstring for what the translation does."""

    name = "colver-dede"
    games = ("coinche",)

    def __init__(self, worlds: int = 20, seed: int = 0) -> None:
        colver = colver_module()
        if colver is None:
            raise RuntimeError("colver is not installed: pip install colver (the bench extra)")
        self.colver = colver
        self.version = str(colver.__version__)
        self.spec = DEDE_SPEC.format(worlds=worlds)
        self.rng = random.Random(seed)
        self.cards = card_numbers(colver)
        self.back = {v: k for k, v in self.cards.items()}
        self.options: dict[str, object] = dict(COLVER_OPTIONS)
        self.declarer = HeuristicBot()
        self.corrections = 0  # colver's calls our rules refused, replaced by pass
        # With one thread, colver's pool runs its searches on the calling thread (measured: its thread time is
        # its process time): the deciding thread's CPU time, as for any bot here, counts nothing of the
        # other threads' (the PIMC bot's table loading, on the same process).
        self.cpu_clock = time.thread_time

    def on_match_start(self, info: pilotta_bot.MatchInfo) -> None:
        if info.game != "coinche":
            raise ValueError(f"colver plays Coinche only, not {info.game}")
        # The translation of the auction holds only where ours is colver's, but for the seats a contra leaves
        # out: bids 80 to 160 and capot in the four suits, a contra that ends the bidding.
        for name, value in (("max_bid", 160), ("no_trump_bids", False), ("all_trump_bids", False)):
            if info.options.get(name, value) != value:
                raise ValueError(f"colver's auction has no {name}={info.options[name]!r}")
        if not info.options.get("coinche_ends_auction", True):
            raise ValueError("colver's auction ends at a contra: coinche_ends_auction=False cannot be translated")
        self.options = dict(info.options)

    # --- The environment of a decision -------------------------------------------------------------------
    def dealt_hands(self, obs: pilotta_bot.Observation) -> list[int]:
        """Each seat's eight cards as dealt (masks): the seat's own, the others' from a world consistent with
        the observation."""
        mine = 0
        for name in obs.hand:
            mine |= 1 << parse_card(name)
        played = [0, 0, 0, 0]
        for trick in [*obs.tricks, obs.trick]:
            for k, name in enumerate(trick.cards):
                played[(trick.leader + k) & 3] |= 1 << parse_card(name)
        if obs.contract is None:  # the auction: every other card is unseen, in any seat
            rest = [c for c in range(32) if not mine >> c & 1]
            self.rng.shuffle(rest)
            hands = [0, 0, 0, 0]
            others = [s for s in range(4) if s != obs.seat]
            for i, c in enumerate(rest):
                hands[others[i // 8]] |= 1 << c
            hands[obs.seat] = mine
            return hands
        # (Declarations are not checked: colver knows none, and only the play must be legal in its world.)
        now = Sampler(Seen.from_observation(obs, self.options)).draw_hands(self.rng)
        return [now[s] | played[s] for s in range(4)]

    def environment(self, obs: pilotta_bot.Observation) -> tuple[Any, Any]:
        """colver's environment of this decision and the seat's agent, having seen every action so far."""
        hands = self.dealt_hands(obs)
        env = self.colver.Env.deal_with_hands(
            obs.dealer, [sorted(self.cards[c] for c in range(32) if hands[s] >> c & 1) for s in range(4)]
        )
        agent = self.colver.Agent(self.spec, seat=obs.seat, seed=self.rng.randrange(2**31))
        agent.init_deal(env)
        actions = [(call.seat, call_action(call.action), False) for call in obs.auction]
        for trick in [*obs.tricks, obs.trick]:
            for k, name in enumerate(trick.cards):
                actions.append(((trick.leader + k) & 3, self.cards[int(parse_card(name))], True))
        for seat, action, is_card in actions:
            self.pass_through(env, agent, seat, is_card)
            # (colver's step does not check whose turn or phase it is: a call stepped as a card would be 7S)
            if env.current_player() != seat or (env.phase() == 1) != is_card:
                raise RuntimeError(f"colver's environment is out of step with the deal at {seat}'s {action}")
            agent.observe(env, action)
            env.step(action)
        self.pass_through(env, agent, obs.seat, obs.phase != "auction")
        if env.current_player() != obs.seat:
            raise RuntimeError(f"colver's environment has seat {env.current_player()} to act, not {obs.seat}")
        return env, agent

    @staticmethod
    def pass_through(env: Any, agent: Any, seat: int, is_card: bool) -> None:
        """colver's auction goes round every seat after a contra, where ours asks only the bidders whether to
        surcontra (a defender has nothing to call), and it may want one pass more to end: the calls our
        auction never asks for are passes, stepped until ``seat`` is to act (and the play begun, for a
        card)."""
        for _ in range(4):
            if env.phase() != 0 or (env.current_player() == seat and not is_card):
                return
            agent.observe(env, PASS)
            env.step(PASS)

    # --- Deciding ----------------------------------------------------------------------------------------
    def decide(self, obs: pilotta_bot.Observation, legal: list[str]) -> str:
        if len(legal) == 1:
            return legal[0]
        if any(code.startswith("declare ") for code in legal):
            return self.declarer.decide(obs, legal)
        env, agent = self.environment(obs)
        action = int(agent.decide(env)["action"])
        if obs.phase == "auction":
            code = call_code(action)
            if code in legal:
                return code
            self.corrections += 1
            return "pass"
        card = card_name(self.back[action])
        for code in (f"play {card} belote", f"play {card}"):
            if code in legal:
                return code
        raise RuntimeError(f"colver played {card}, which is not legal here: {legal}")
