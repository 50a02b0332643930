"""``arena check-bot``: the conformance checks of ``arena.bots.conformance`` on a bot the command starts (a
directory or manifest, an upload's or an operator's: ``arena.bots.local``) or one that runs already
(``host:port``), each printed PASS / FAIL / WARN / SKIP as it finishes. With ``--sandbox`` the package is packed
as ``arena bot submit`` packs it, unpacked as a worker unpacks it, started in the worker's sandbox and checked
by the very function a worker's validation runs (``arena.bots.validation.check_in_sandbox``): the same verdict.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TextIO

from arena.bots.check_report import CheckReport, Result
from arena.bots.conformance import CheckSettings, Target, run_checks
from arena.bots.local import LocalBot, read_bot, start_on_host, unpacked
from arena.bots.packages import PackageError, members, pack, read_manifest
from arena.bots.validation import CHECK_DEALS, check_in_sandbox
from arena.cli.match import add_limit_arguments
from arena.model import ManifestError
from referee.match.bots import BotProcess, Manifest, is_endpoint, launch_bots, resolve_bot
from referee.match.bots import ManifestError as RefereeManifestError

_DEFAULTS = CheckSettings()
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class LivePrinter:
    """Prints each check as it finishes. On a terminal, a long check (a game's deals, the sandbox's start,
    SIGTERM) also has a progress line, redrawn in place (at most 10 times a second) and wiped by the next
    result; elsewhere (a pipe, a CI log) each long check's start is one plain line, and nothing is redrawn."""

    def __init__(self, out: TextIO) -> None:
        self.out, self.tty = out, out.isatty()
        self._drawn = False
        self._last = 0.0

    def _wipe(self) -> None:
        if self._drawn:
            self.out.write("\r\x1b[K")
            self._drawn = False

    def result(self, r: Result) -> None:
        self._wipe()
        for line in r.lines():
            print(line, file=self.out)
        self.out.flush()

    def progress(self, text: str, start: bool) -> None:
        if not self.tty:
            if start:
                print(f"...   {text}", file=self.out, flush=True)
            return
        now = time.monotonic()
        if not start and now - self._last < 0.1:
            return
        self._last = now
        width = shutil.get_terminal_size((100, 24)).columns - 1
        self.out.write(f"\r\x1b[K...   {text}"[: width + 4])  # (the 4 of the escape take no room)
        self.out.flush()
        self._drawn = True

    def report(self) -> CheckReport:
        return CheckReport(on_result=self.result, on_progress=self.progress)

    def summary(self, report: CheckReport) -> None:
        self._wipe()
        print(report.summary(), file=self.out, flush=True)


def settings_of(args: argparse.Namespace, games: tuple[str, ...] = ()) -> CheckSettings:
    deals = args.deals if args.deals is not None else (CHECK_DEALS if args.sandbox else _DEFAULTS.deals)
    return CheckSettings(
        games=tuple(args.games) if args.games else (games or None),
        deals=deals,
        seed=args.seed,
        opponent=args.opponent,
        grace_s=args.grace_s,
        deadline_ms=args.deadline_ms,
        time_bank_ms=args.time_bank_ms,
        logs=args.logs,
    )


def add_check_bot_parser(sub: Any) -> None:
    p = sub.add_parser(
        "check-bot",
        help="check that a bot follows the protocol, for every game it plays (--sandbox: as the arena will)",
        description="Seats the bot as its own partner against a sample opponent that bids, in every game its "
        "handshake lists, in the protocol version it chooses (1: unary calls, 2: a stream per seat) and, when "
        "a version 2 bot also speaks version 1, in version 1 too. Also checks its health service, its "
        "handshake against its manifest, and (for a bot it starts here) that it stops cleanly on SIGTERM. "
        "It reads the manifest an upload has (with its runtime) or an operator's. With --sandbox it checks "
        "the package as a worker validates an upload: packed as `arena bot submit` packs it, in the worker's "
        "sandbox, with the validation's checks, and says the verdict the arena would give. Each check is "
        "printed as it finishes. Exit code 0 when no check failed (warnings are not failures), 1 when one "
        "failed, 2 for bad arguments or a machine that cannot sandbox.",
        epilog="examples:\n  arena check-bot path/to/mybot\n  arena check-bot --sandbox path/to/mybot   "
        "# as the arena's validation will (root, bubblewrap)\n  arena check-bot localhost:50061 --games pilotta "
        "--deals 8\n  arena check-bot path/to/mybot --out check.json   # the record of its games",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("bot", metavar="BOT", help="host:port, or a bot directory / manifest file (--sandbox: or archive)")
    p.add_argument(
        "--sandbox",
        action="store_true",
        help="run it in the worker's sandbox with the validation's checks (an upload's package: docs/submitting.md)",
    )
    p.add_argument(
        "--games", nargs="+", default=None, help="games to check (default: every game the bot's handshake lists)"
    )
    p.add_argument(
        "--deals",
        type=int,
        default=None,
        help=f"played deals per game (default {_DEFAULTS.deals}, with --sandbox the validation's {CHECK_DEALS}; "
        "thrown-in deals do not count)",
    )
    p.add_argument(
        "--seed", type=int, default=_DEFAULTS.seed, help="the seed of the first game's packs (default %(default)s)"
    )
    p.add_argument(
        "--opponent",
        default=_DEFAULTS.opponent,
        metavar="BOT",
        help="the bot in seats 1 and 3 (default: sample_bots/heuristic)",
    )
    p.add_argument(
        "--grace-s",
        type=float,
        default=_DEFAULTS.grace_s,
        help="how long the bot may take to stop after SIGTERM (default 3)",
    )
    p.add_argument("--out", metavar="FILE", default=None, help="write the records of the check's games (JSON)")
    add_limit_arguments(p, strikes=False)  # every answer is checked: no forfeit for strikes
    p.set_defaults(func=cmd_check_bot)


def cmd_check_bot(args: argparse.Namespace) -> int:
    try:
        if args.sandbox:
            return check_sandboxed(args)
        local = None if is_endpoint(args.bot) and not Path(args.bot).exists() else read_bot(Path(args.bot))
        opponent = resolve_bot(args.opponent)
    except (ManifestError, RefereeManifestError, PackageError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    printer = LivePrinter(sys.stdout)
    report = printer.report()
    records: list[dict[str, Any]] = []
    logs = Path(args.logs) if args.logs else Path(tempfile.mkdtemp(prefix="pilotta-bots-"))
    with contextlib.ExitStack() as stack:
        process: BotProcess | None = None
        if local is not None and local.package is not None:  # an upload's package, started here
            check_uploadable(local, report)
            report.progress(f"starting {local.manifest.name}", start=True)
            process = start_on_host(local, logs)
            stack.callback(process.stop, args.grace_s)
        bots: list[str | Manifest] = [opponent]
        if local is not None and local.package is None:
            bots.insert(0, local.manifest)
        endpoints, procs = stack.enter_context(launch_bots(bots, logs, stop_grace_s=args.grace_s))
        by_endpoint = {p.endpoint: p for p in procs}
        if process is None and local is not None:
            process = by_endpoint.get(endpoints[0])
        endpoint = args.bot if local is None else process.endpoint if process else endpoints[0]
        target = Target(endpoint, None if local is None else local.manifest, process)
        started = process is None or process.error is None
        if process is not None:
            report.add("bot starts and serves", started, process.error or f"on {endpoint}; log: {process.stderr_path}")
        rival = by_endpoint.get(endpoints[-1])
        if rival is not None and rival.error:
            report.add("the opponent starts", False, rival.error)
        elif started:  # (a package the upload would refuse is still checked: every failure is shown at once)
            records = run_checks(target, endpoints[-1], settings_of(args), report)
    printer.summary(report)
    if args.out:
        Path(args.out).write_text(
            json.dumps({"format": "pilotta-arena/check-bot", "bot": args.bot, "matches": records}, indent=1),
            encoding="utf-8",
        )
        print(f"records of {len(records)} matches written to {args.out}", file=sys.stderr)
    return EXIT_OK if report.ok else EXIT_FAILED


def check_uploadable(local: LocalBot, report: CheckReport) -> None:
    """Would ``arena bot submit`` take the directory: its members and size (``arena.bots.packages``)?"""
    try:
        data = pack(local.path)
        count = len(members(data))
    except PackageError as e:
        report.add("the package is accepted for upload", False, str(e))
        return
    report.add("the package is accepted for upload", True, f"{count} members, {len(data)} bytes packed")


def check_sandboxed(args: argparse.Namespace) -> int:
    """``--sandbox``: the package as the arena validates an upload, and the verdict it would give."""
    from arena.sandbox import Sandbox, probe  # (the sandbox's machinery only when asked for)

    if args.out:
        raise ManifestError("--out is not taken with --sandbox (the validation keeps no records)")
    path = Path(args.bot)
    if not path.exists():
        raise ManifestError(f"{args.bot}: --sandbox checks a package: a directory holding manifest.json, or an archive")
    sandboxing = probe()
    if not sandboxing.ok:
        print(
            f"error: cannot sandbox here: {sandboxing.reason} (docs/operating.md: what a worker needs)", file=sys.stderr
        )
        return EXIT_USAGE
    printer = LivePrinter(sys.stdout)
    report = printer.report()
    try:
        data = pack(path)
        pm = read_manifest(data)  # the members and the manifest, checked as the upload checks them
    except (PackageError, ManifestError) as e:
        report.add("the package is accepted for upload", False, str(e))
        printer.summary(report)
        print(f"verdict: the arena refuses this upload: {e}", flush=True)
        return EXIT_FAILED
    report.add("the package is accepted for upload", True, f"{len(members(data))} members, {len(data)} bytes packed")
    logs = Path(args.logs) if args.logs else Path(tempfile.mkdtemp(prefix="pilotta-bots-"))
    try:
        sandbox = Sandbox()
    except OSError as e:  # the probe passed, but this machine's temporary directory cannot hold a sandbox
        print(f"error: cannot sandbox here: {e}", file=sys.stderr)
        return EXIT_USAGE
    try:
        with unpacked(data) as directory:
            bot = sandbox.launch(pm.manifest, pm.command, directory, logs)
        state = check_in_sandbox(bot, pm.manifest, settings_of(args, pm.manifest.games), report)
    except OSError as e:  # (what a worker would log and retry: not the package's doing)
        print(f"error: the sandbox could not start it: {e}", file=sys.stderr)
        return EXIT_USAGE
    finally:
        shutil.rmtree(sandbox.work_dir, ignore_errors=True)
    printer.summary(report)
    if state.state == "validated":
        print("verdict: validated (a worker's validation of this upload passes it)", flush=True)
        return EXIT_OK
    print(f"verdict: rejected, as a worker's validation would reject this upload: {state.reason}", flush=True)
    return EXIT_FAILED
