"""The names and versions of the record formats, shared by the writer (``referee.record``) and the
verifier (``referee.verify``); docs/game-record.md describes the formats."""

from __future__ import annotations

FORMAT = "pilotta-arena/game-record"
# 2: explicit packs (``seed`` may be null), ``hanging_after`` on every finished deal, each bot action's
# ``ms`` and, where the referee stepped in, the bot's ``answer`` or ``error``. Version 1 records verify too.
FORMAT_VERSION = 2
FORMAT_VERSIONS = (1, 2)
MATCH_RECORD_FORMAT = "pilotta-arena/match-record"  # a match: one game record per leg
MATCH_FORMAT_VERSION = 2

# How the referee classifies a bot's answer; every outcome but "ok" means the referee played the first
# legal action for the bot (and the crash outcomes end the match).
OUTCOMES = ("ok", "timeout", "illegal_action", "malformed_reply", "unreachable", "crashed")
