"""What a bot's answer to one decision comes to: the choice its reply makes among the legal actions, or why it
is refused (``classify_reply``), and the words of a decision that got no answer (``timeout_detail``: the
clock it ran out of; ``died``: how a bot this match started ended).
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Sequence

from pilotta.arena.v1 import bot_pb2

from referee.actions import parse_action
from referee.match import wire
from referee.match.bots import BotProcess, last_words
from referee.match.outcome import Decision


def classify_reply(
    reply: bot_pb2.DecideReply, legal: Sequence[str], decl_codes: tuple[str, ...], latency: float, cpu_ms: float | None
) -> Decision:
    """The decision a bot's reply makes among the ``legal`` codes: its index, or why it is refused
    (``malformed_reply``; ``illegal_action`` for a well-formed action that is not legal now)."""
    comment = wire.reply_comment(reply) if reply.comment else ""
    which = reply.WhichOneof("choice")
    if which == "index" and reply.index < len(legal):  # the fast path (codes in ``legal`` are unique)
        return Decision(reply.index, "ok", latency, "", comment, None, cpu_ms)
    if which == "action":
        code_text = reply.action
        if code_text in legal:  # the fast path
            return Decision(legal.index(code_text), "ok", latency, "", comment, None, cpu_ms)
    try:
        chosen = wire.chosen_action(reply, legal)
        return Decision(legal.index(chosen), "ok", latency, "", comment, None, cpu_ms)
    except wire.MalformedReplyError as e:
        outcome = "malformed_reply"
        if which == "action":
            answer = reply.action[:200]
            try:
                parse_action(reply.action[:100], decl_codes)
                outcome = "illegal_action"  # a well-formed action, not legal now
            except ValueError:
                pass
        else:
            answer = f"index {reply.index}" if which == "index" else "no choice"
        return Decision(0, outcome, latency, str(e)[:300], comment, answer, cpu_ms)


def timeout_detail(deadline_ms: int, bank_ms: float) -> str:
    """A timeout, with the clock it ran out of: the deadline and what the bank added."""
    if bank_ms < 0.5:
        return f"no answer within the {deadline_ms} ms deadline (the time bank was already empty)"
    return f"no answer within {deadline_ms} ms deadline + {bank_ms:.0f} ms from the bank; bank now empty"


def died(proc: BotProcess | None, detail: str) -> str:
    """How a bot this match started (``proc``; None: one it was only given the address of) failed: its exit
    code, last words and log when its process has ended (waited for briefly: a broken connection usually
    comes just before the exit); else ``detail``."""
    if proc is None:
        return detail
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.process.wait(timeout=1.0)
    code = proc.process.poll()
    if code is None:
        return f"{detail} (its process still runs; log: {proc.stderr_path})"
    said = last_words(proc.stderr_path)
    words = f"; last words: {said!r}" if said else "; no last words"
    return f"process exited with code {code}{words}; log: {proc.stderr_path}"
