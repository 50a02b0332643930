"""The names and versions of the record formats, shared by the writer (``referee.record``) and the
verifier (``referee.verify``); docs/game-record.md describes the formats."""

from __future__ import annotations

FORMAT = "pilotta-arena/game-record"
# 3: a score's ``notes`` are objects, a stable code with its values and the words rendered from them
# (``referee.notes``); versions 1 and 2 stated the words alone. 2: explicit packs (``seed`` may be null),
# ``hanging_after`` on every finished deal, each bot action's ``ms`` and, where the referee stepped in, the
# bot's ``answer`` or ``error``. Records of every version verify.
FORMAT_VERSION = 3
FORMAT_VERSIONS = (1, 2, 3)
MATCH_RECORD_FORMAT = "pilotta-arena/match-record"  # a match: one game record per leg
MATCH_FORMAT_VERSION = 2

# How the referee classifies a bot's answer; every outcome but "ok" means the referee played the first
# legal action for the bot (and the crash outcomes end the match).
OUTCOMES = ("ok", "timeout", "illegal_action", "malformed_reply", "unreachable", "crashed")
