"""When a bot's version is suspended, and why, in public words: its failed starts (``note_start``: past
``SUSPEND_AFTER`` in a row) and its forfeits (``note_forfeit``: past the ladder's ``ForfeitLimits``), counted
on the bot's hash; the lifting of both by a new current version (``_lift``); and the name a bot gives itself
in its Handshake, kept to a name's characters.  ``Registry`` (``arena.bots.registry``) is a ``Suspensions``.
"""

from __future__ import annotations

import re
from typing import Any

from arena.model import ForfeitLimits
from arena.store import keys

SUSPEND_AFTER = 3  # matches in a row a version failed to start or answer its Handshake
_NO_HANDSHAKE = "no Handshake answer"
# What a Handshake name may hold as it is shown: letters and digits (any script), space, and ._-+#() .
_HANDSHAKE_NAME_UNSAFE = re.compile(r"[^\w .+#()\-]")


def _public_start_failure(why: str) -> str:
    """Why a version did not start, in the arena's words: a suspension is public (ListBots), and the
    launcher's words are not (a bot's last words would carry out anything it read; its log's path is the
    worker's). Its owner reads those in the bot's logs."""
    return _NO_HANDSHAKE if why == _NO_HANDSHAKE else "it could not be started"


def public_suspension(reason: str) -> str:
    """A stored suspension as it may be shown: one stored before the reason was put in public words keeps
    its first clause, with the cause in the arena's words."""
    head, sep, why = reason.partition(" in a row: ")
    return head + sep + _public_start_failure(why) if sep else reason


class Suspensions:
    """Failed starts, forfeits and suspension, on the registry's Redis."""

    # Any: redis-py's stubs type replies as bytes | str and cannot know the
    # client was made with decode_responses=True (see redis_server.connect).
    r: Any

    def note_start(self, bot_id: str, version: int, failed: bool, why: str = "", counted_as: str = "") -> bool:
        """Count a match in which the version failed to start or answer its Handshake (``failed``), or
        did (which resets the count). After ``SUSPEND_AFTER`` failures in a row the version is suspended:
        never scheduled until an update or a new upload. True when this call suspended it.  ``counted_as``
        (the match's id): a call repeated with the same one counts nothing, so a retry whose first try was
        applied but whose reply was lost (Redis restarting) does not count the match twice."""
        reason = f"version {version} failed to start or answer its Handshake in {{n}} matches in a row: "
        done = self.r.eval(
            _START_LUA,
            1,
            keys.bot(bot_id),
            "1" if failed else "0",
            SUSPEND_AFTER,
            reason + _public_start_failure(why),
            counted_as,
        )
        return bool(done)

    def note_forfeit(
        self, bot_id: str, version: int, forfeited: bool, why: str, limits: ForfeitLimits, counted_as: str = ""
    ) -> bool:
        """Count a match the version played: forfeited by it (``forfeited``, ``why`` the public forfeit
        reason) or not (which ends a run of forfeits).  Past ``limits`` (the ladder's) the version is
        suspended, with the reason; a match of another version than the current one (a pinned seat)
        judges nothing.  True when this call suspended it.  One script: two workers counting at once
        cannot both miss the limit.  ``counted_as`` (the match and seat): a call repeated with the same one
        counts nothing (a retry after a lost reply)."""
        last = f" (the last: {why[:200]})" if why else ""  # the public reason: the arena's words
        done = self.r.eval(
            _FORFEIT_LUA,
            2,
            keys.bot(bot_id),
            keys.bot_forfeits(bot_id),
            str(version),
            "1" if forfeited else "0",
            limits.in_a_row,
            limits.window,
            limits.in_window,
            f"version {version} forfeited {{n}} matches in a row{last}",
            f"version {version} forfeited {{n}} of its last {{m}} matches{last}",
            counted_as,
        )
        return bool(done)

    def note_handshake_name(self, bot_id: str, name: str) -> None:
        """The name the bot gave itself in its last Handshake: shown on its page beside the registered one
        (which is the only name replays and results use: a bot may call itself anything). It is public, so
        it is kept to a name's characters: a bot cannot publish a path it found in its sandbox (or
        markup, or control characters) through it: every other character becomes '?'; 64 at most."""
        self.r.hset(keys.bot(bot_id), "handshake_name", _HANDSHAKE_NAME_UNSAFE.sub("?", name[:64]))

    def handshake_name(self, bot_id: str) -> str:
        """The name the bot gave itself in its last Handshake, or empty before its first match."""
        return str(self.r.hget(keys.bot(bot_id), "handshake_name") or "")

    def suspended(self, bot_id: str) -> str:
        """Why the bot is suspended, or empty."""
        return public_suspension(str(self.r.hget(keys.bot(bot_id), "suspended") or ""))

    def _lift(self, pipe: Any, bot_id: str) -> None:
        """A new current version starts with a clean slate: no suspension, no failures or forfeits counted."""
        pipe.hdel(keys.bot(bot_id), "suspended")
        pipe.hset(keys.bot(bot_id), mapping={"start_failures": 0, "forfeits_in_a_row": 0})
        pipe.delete(keys.bot_forfeits(bot_id))


# KEYS: the bot's hash, its forfeit window (list of '1' forfeited / '0' not, newest first)
# ARGV: the version that played, '1' forfeited | '0' not, in_a_row limit (0: off), window, in_window limit (0: off),
#       the reason if in a row ({n}: the count), the reason if in the window ({n}: forfeits, {m}: matches)
# Returns 1 if this call suspended the bot, else 0.
# KEYS: the bot's hash.  ARGV: 1 if the version failed to start (else 0), the failures in a row that suspend
# it, the reason (``{n}``: how many), the call's once-key (empty: none).  1 when this call suspended it.
_START_LUA = """
if ARGV[4] ~= '' then
  if redis.call('HGET', KEYS[1], 'start_counted') == ARGV[4] then return 0 end
  redis.call('HSET', KEYS[1], 'start_counted', ARGV[4])
end
if ARGV[1] ~= '1' then
  redis.call('HSET', KEYS[1], 'start_failures', 0)
  return 0
end
local n = redis.call('HINCRBY', KEYS[1], 'start_failures', 1)
if n < tonumber(ARGV[2]) or redis.call('HEXISTS', KEYS[1], 'suspended') == 1 then return 0 end
redis.call('HSET', KEYS[1], 'suspended', (string.gsub(ARGV[3], '{n}', tostring(n))))
return 1
"""

# KEYS: the bot's hash, its list of recent matches (1: forfeited, 0: not).  ARGV: the version the match was
# played by, 1 if it forfeited (else 0), the ladder's limits (in a row, window, in the window: 0 is none),
# the two reasons (``{n}``, ``{m}``: the counts), the call's once-key (empty: none).  A match of another
# version than the current one judges nothing.  1 when this call suspended it.
_FORFEIT_LUA = """
if redis.call('HGET', KEYS[1], 'version') ~= ARGV[1] then return 0 end
if ARGV[8] ~= '' then
  if redis.call('HGET', KEYS[1], 'forfeit_counted') == ARGV[8] then return 0 end
  redis.call('HSET', KEYS[1], 'forfeit_counted', ARGV[8])
end
local row = 0
if ARGV[2] == '1' then
  row = redis.call('HINCRBY', KEYS[1], 'forfeits_in_a_row', 1)
else
  redis.call('HSET', KEYS[1], 'forfeits_in_a_row', 0)
end
redis.call('LPUSH', KEYS[2], ARGV[2])
redis.call('LTRIM', KEYS[2], 0, tonumber(ARGV[4]) - 1)
if ARGV[2] ~= '1' or redis.call('HEXISTS', KEYS[1], 'suspended') == 1 then return 0 end
local reason = nil
if tonumber(ARGV[3]) > 0 and row >= tonumber(ARGV[3]) then
  reason = (string.gsub(ARGV[6], '{n}', tostring(row)))
elseif tonumber(ARGV[5]) > 0 then
  local seen = redis.call('LRANGE', KEYS[2], 0, -1)
  local n = 0
  for _, x in ipairs(seen) do n = n + tonumber(x) end
  if n >= tonumber(ARGV[5]) then
    reason = (string.gsub((string.gsub(ARGV[7], '{n}', tostring(n))), '{m}', tostring(#seen)))
  end
end
if reason == nil then return 0 end
redis.call('HSET', KEYS[1], 'suspended', reason)
return 1
"""
