"""What ``arena check-bot`` reports (``arena.bots.conformance`` runs the checks): each check's result (PASS,
FAIL, WARN or SKIP, with the first failing decision in full), told to a listener as it comes so that the
command prints it as it goes, and the words for what a bot did wrong, the same whatever its language: an
error status by its code and description, never in one SDK's terms.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

import grpc

from referee.match import DecisionEvent

_STATUS = re.compile(r"^([A-Z_]+): (.*)$", re.S)  # how the referee words an error status: "CODE: description"
_STATUS_CODES = {c.name for c in grpc.StatusCode}
_V2_ERROR = "the bot could not decide: "  # ... and a version 2 BotMessage's error


def error_text(detail: str) -> str:
    """An error a bot answered instead of a decision, named as the bot sent it, whatever its language: a gRPC
    status by its code and description (version 1, or a stream ended by one), or the error of a version 2
    ``BotMessage``; "(no description)" when it sent none (a Java ``onError`` with a bare status, say)."""
    m = _STATUS.match(detail)
    if m and m.group(1) in _STATUS_CODES:
        code, said = m.group(1), m.group(2).strip()
        return f"the bot answered {code}: {said}" if said else f"the bot answered {code} (no description)"
    if detail.startswith(_V2_ERROR):
        said = detail[len(_V2_ERROR) :].strip()
        return f"the bot answered an error: {said}" if said else "the bot answered an error (no description)"
    return f"the bot's reply is malformed: {detail}"


def failure_text(event: DecisionEvent) -> str:
    """What went wrong with one decision, in the bot author's terms ("the bot answered INTERNAL: ...")."""
    if event.outcome == "malformed_reply" and event.answer is None:  # an error, or bytes that are no reply
        return error_text(event.detail)
    if event.answer is not None:
        return f"bot answered {event.answer!r}: {event.outcome} ({event.detail})"
    return f"{event.outcome}: {event.detail}"


@dataclass(frozen=True)
class Failed:
    """The first failing decision of a check, and where the bot's log is."""

    game: str
    event: DecisionEvent
    log: str

    def lines(self) -> list[str]:
        e = self.event
        where = f"game {self.game}, deal {e.deal_number + 1}" + (f", trick {e.trick}" if e.trick else "")
        return [
            f"first failing decision: {where}, seat {e.seat} ({e.phase})",
            f"hand: {' '.join(e.hand) or '(none)'}",
            f"legal actions: {', '.join(e.legal)}",
            failure_text(e),
            f"the referee played {e.action!r} instead",
            f"bot's log: {self.log}",
        ]


@dataclass(frozen=True)
class Result:
    name: str
    status: str  # PASS, FAIL, WARN (worth fixing, not refused) or SKIP
    detail: str = ""
    failed: Failed | None = None

    def lines(self) -> list[str]:
        head = f"{self.status}  {self.name}" + (f": {self.detail}" if self.detail else "")
        return [head, *(f"      {line}" for line in (self.failed.lines() if self.failed else ()))]


STATUSES = ("PASS", "FAIL", "WARN", "SKIP")


@dataclass
class CheckReport:
    """The checks' results in order. ``on_result`` (if any) is told each one as it is added, and
    ``on_progress`` what a long check is doing (``progress``): what ``arena check-bot`` prints as it goes."""

    results: list[Result] = field(default_factory=list)
    on_result: Callable[[Result], None] | None = None
    on_progress: Callable[[str, bool], None] | None = None

    def _add(self, result: Result) -> None:
        self.results.append(result)
        if self.on_result is not None:
            self.on_result(result)

    def add(self, name: str, passed: bool, detail: str = "", failed: Failed | None = None) -> None:
        self._add(Result(name, "PASS" if passed else "FAIL", detail, None if passed else failed))

    def warn(self, name: str, detail: str) -> None:
        self._add(Result(name, "WARN", detail))

    def skip(self, name: str, why: str) -> None:
        self._add(Result(name, "SKIP", why))

    def progress(self, text: str, start: bool = False) -> None:
        """What a long check is doing now; ``start``: it begins (a plain line where nothing redraws)."""
        if self.on_progress is not None:
            self.on_progress(text, start)

    @property
    def ok(self) -> bool:
        return all(r.status != "FAIL" for r in self.results)

    def summary(self) -> str:
        counts = {s: sum(1 for r in self.results if r.status == s) for s in STATUSES}
        n = counts["WARN"]
        warned = f", {n} {'warning' if n == 1 else 'warnings'}" if n else ""
        return f"{counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped{warned}"

    def print(self, out: TextIO) -> None:
        for r in self.results:
            for line in r.lines():
                print(line, file=out)
        print(self.summary(), file=out)
