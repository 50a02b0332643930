"""pilotta_bot: write a pilotta-arena bot in Python as one class.

    import pilotta_bot

    class MyBot:
        name = "my-bot"

        def decide(self, obs: pilotta_bot.Observation, legal: list[str]) -> str:
            return legal[0]  # one of the legal action codes: "pass", "bid 90 H", "play JH", ...

    if __name__ == "__main__":
        pilotta_bot.main(MyBot)  # --port N (or PORT=N), --host, --seed

Optional methods: ``on_match_start(info: MatchInfo)``, ``on_deal_end(result: DealResult)``,
``on_match_end(result: MatchResult)``. The SDK depends only on the generated ``pilotta`` package and
grpcio, never on the referee. See docs/protocol.md.
"""

from pilotta_bot import cards
from pilotta_bot.observation import (
    SEAT_NAMES,
    Announcement,
    Belote,
    Call,
    Contract,
    DealResult,
    Declaration,
    MatchInfo,
    MatchResult,
    Observation,
    Trick,
    observation_from_proto,
    partner_of,
    side_of,
)
from pilotta_bot.server import (
    PROTOCOL_VERSION,
    Bot,
    BotLike,
    BotServicer,
    RunningBot,
    main,
    parse_args,
    serve,
    start,
)

__all__ = [
    "PROTOCOL_VERSION",
    "SEAT_NAMES",
    "Announcement",
    "Belote",
    "Bot",
    "BotLike",
    "BotServicer",
    "Call",
    "Contract",
    "DealResult",
    "Declaration",
    "MatchInfo",
    "MatchResult",
    "Observation",
    "RunningBot",
    "Trick",
    "cards",
    "main",
    "observation_from_proto",
    "parse_args",
    "partner_of",
    "serve",
    "side_of",
    "start",
]
