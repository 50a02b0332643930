"""``arena series A B``: boards between two bots here, K matches at once, a running score and an SPRT.

A cutechess-cli for this family. The series plays duplicate matches of ``--boards-per-match`` boards (each
board at both tables with the partnerships swapped, ``referee.match``), match ``j`` dealt from seed
``seed + j``, until ``--boards`` boards are played, ``--concurrency`` matches at a time (each match slot
has its own processes of the manifest bots, started once for the series; a bot given as ``host:port`` is
shared by the slots). Every board's score is A's (team 0's) on ``--scale``.

While it plays it shows the running score: the mean board score with its ~95% interval, boards won, tied
and lost, and the likelihood of superiority (P(A's mean > 0), fishtest's LOS); it ends with a summary and
writes a record of every board (``--out``). With ``--sprt`` it runs ``arena.rating.sprt.Sprt`` on the board
scores (H0 ``mean = mu0``, H1 ``mean = mu1``, in board-score units, error rates alpha and beta) and stops as
soon as the test accepts one.

Exit codes (so that a CI can gate on them):

    0  the series was played (without --sprt), or the SPRT accepted H1 (A is stronger by mu1)
    1  the SPRT accepted H0 (A is not stronger by mu1)
    2  a usage or setup error (bad option, a bot that cannot be started)
    3  the SPRT had not decided when --boards boards had been played
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import threading
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

from arena.cli.data_dir import DEFAULT_DATA_DIR, SERIES_DIR
from arena.cli.match import add_limit_arguments, match_settings, resolve_bots
from arena.rating.sprt import Sprt, SprtState, Verdict, likelihood_of_superiority, mean_interval
from referee.cli import add_ruleset_arguments, parse_options
from referee.errors import RulesetError
from referee.match import MatchOutcome, MatchSettings, run_match
from referee.match.bots import BotStartError, Manifest, ManifestError, launch_bots
from referee.match.transport import BotLinks
from referee.rules import get_ruleset
from referee.scales import DEFAULT_SCALE, SCALES, BoardResult

SERIES_FORMAT = "pilotta-arena/series"
EXIT_DONE, EXIT_H0, EXIT_USAGE, EXIT_UNDECIDED = 0, 1, 2, 3


@dataclass(frozen=True)
class SeriesBoard:
    match_id: str
    seed: int
    board: BoardResult

    def to_json(self) -> dict[str, Any]:
        return {"match_id": self.match_id, "seed": self.seed, **self.board.to_json()}


@dataclass
class SeriesScore:
    """The running score of a series: A's board scores so far."""

    state: SprtState = field(default_factory=SprtState)
    won: int = 0
    tied: int = 0
    lost: int = 0

    def add(self, score: float) -> None:
        self.state = self.state.add(score)
        if score > 0:
            self.won += 1
        elif score < 0:
            self.lost += 1
        else:
            self.tied += 1

    def line(self) -> str:
        low, high = mean_interval(self.state)
        error = (high - low) / 2 if self.state.n >= 2 else float("inf")
        los = likelihood_of_superiority(self.state)
        return (
            f"score {self.state.mean:+.3f} ± {error:.3f}, boards won/tied/lost {self.won}/{self.tied}/{self.lost}, "
            f"LOS {100 * los:.1f}%"
        )

    def to_json(self) -> dict[str, Any]:
        low, high = mean_interval(self.state)
        return {
            "boards": self.state.n,
            "mean": self.state.mean,
            "interval_95": [low, high] if self.state.n >= 2 else None,
            "won": self.won,
            "tied": self.tied,
            "lost": self.lost,
            "likelihood_of_superiority": likelihood_of_superiority(self.state),
        }


@dataclass
class SeriesResult:
    score: SeriesScore
    boards: list[SeriesBoard]
    verdict: Verdict | None  # None without an SPRT
    llr: float | None
    matches: int
    forfeits: list[str]


def progress_bar(done: int, total: int, width: int = 30) -> str:
    filled = width * min(done, total) // max(total, 1)
    return "[" + "#" * filled + "." * (width - filled) + f"] {done}/{total} boards"


def play_series(
    bots: Sequence[str | Manifest],
    base: MatchSettings,
    boards: int,
    boards_per_match: int,
    concurrency: int,
    sprt: Sprt | None = None,
    on_board: Callable[[SeriesScore, SeriesBoard], None] | None = None,
    on_match: Callable[[SeriesScore, MatchOutcome], None] | None = None,
) -> SeriesResult:
    """Play the series (see the module docstring); ``bots`` are A and B."""
    if boards < 1 or boards_per_match < 1 or concurrency < 1:
        raise ValueError("boards, boards per match and concurrency must each be at least 1")
    sizes = [min(boards_per_match, boards - start) for start in range(0, boards, boards_per_match)]
    score = SeriesScore()
    played: list[SeriesBoard] = []
    forfeits: list[str] = []
    verdict: Verdict | None = None if sprt is None else Verdict.CONTINUE
    stop = threading.Event()
    prefix = f"series-{uuid.uuid4().hex[:6]}"
    slots = min(concurrency, len(sizes))
    with contextlib.ExitStack() as stack:
        # One set of processes per slot: a slot plays one match at a time.
        slot_endpoints = [
            stack.enter_context(launch_bots(bots, base.log_dir, startup_timeout_s=base.startup_timeout_s))[0]
            for _ in range(slots)
        ]
        links = [stack.enter_context(contextlib.closing(BotLinks(base.max_message_bytes))) for _ in range(slots)]
        free = list(range(slots))
        pending: dict[Future[MatchOutcome], tuple[int, int]] = {}  # future -> (seed, slot)
        next_match = 0
        with ThreadPoolExecutor(max_workers=slots, thread_name_prefix="series") as pool:
            while (next_match < len(sizes) and not stop.is_set()) or pending:
                while free and next_match < len(sizes) and not stop.is_set():
                    slot = free.pop()
                    seed = base.seed + next_match
                    settings = replace(base, seed=seed, deals=sizes[next_match], duplicate=True)
                    fut = pool.submit(
                        run_match,
                        slot_endpoints[slot],
                        settings,
                        f"{prefix}-{next_match}",
                        cancel=stop,
                        links=links[slot],
                    )
                    pending[fut] = (seed, slot)
                    next_match += 1
                done, _ = wait(pending, timeout=None, return_when=FIRST_COMPLETED)
                for fut in done:
                    seed, slot = pending.pop(fut)
                    free.append(slot)
                    if stop.is_set():
                        continue  # the SPRT decided: a match still playing then counts for nothing
                    outcome = fut.result()
                    if outcome.forfeit is not None:
                        forfeits.append(f"{outcome.match_id}: {outcome.forfeit.reason}")
                    for board in outcome.boards:
                        entry = SeriesBoard(outcome.match_id, seed, board)
                        score.add(board.score)
                        played.append(entry)
                        if on_board is not None:
                            on_board(score, entry)
                        if sprt is not None:
                            verdict = sprt.verdict(score.state)
                            if verdict is not Verdict.CONTINUE:
                                stop.set()
                                break
                    if on_match is not None:
                        on_match(score, outcome)
    llr = None if sprt is None else sprt.llr(score.state)
    return SeriesResult(score, played, verdict, llr, next_match, forfeits)


# --- the command ----------------------------------------------------------------------------------------
def add_series_parser(sub: Any) -> None:
    p = sub.add_parser(
        "series",
        help="play boards between two bots here, K matches at once, with a running score and an optional SPRT",
        description=__doc__.split("\n\n")[1] + " Exit codes: 0 played (or H1 accepted with --sprt), "
        "1 H0 accepted, 2 usage error, 3 SPRT undecided after --boards boards.",
    )
    p.add_argument("bots", nargs=2, metavar="BOT", help="A and B: host:port, or a bot directory / manifest")
    add_ruleset_arguments(p)
    p.add_argument("--boards", type=int, default=200, help="boards to play at most (default 200)")
    p.add_argument("--concurrency", type=int, default=1, help="matches at once (default 1)")
    p.add_argument("--boards-per-match", type=int, default=4, help="boards in each duplicate match (default 4)")
    p.add_argument("--seed", type=int, default=0, help="match j deals from seed + j (default 0)")
    p.add_argument("--scale", choices=SCALES, default=DEFAULT_SCALE, help=f"board scale (default {DEFAULT_SCALE})")
    p.add_argument("--sprt", action="store_true", help="stop as soon as an SPRT on the board scores decides")
    p.add_argument("--mu0", type=float, default=0.0, help="H0: A's mean board score (default 0)")
    p.add_argument("--mu1", type=float, default=Sprt().mu1, help=f"H1: A's mean board score (default {Sprt().mu1})")
    p.add_argument("--alpha", type=float, default=0.05, help="P(accept H1 | H0) (default 0.05)")
    p.add_argument("--beta", type=float, default=0.05, help="P(accept H0 | H1) (default 0.05)")
    p.add_argument(
        "--out",
        default=None,
        metavar="FILE",
        help="where to write the record of every board (default: series/series-<id>.json in --data-dir)",
    )
    p.add_argument(
        "--data-dir",
        default=DEFAULT_DATA_DIR,
        help="without --out, the record goes to its series/ directory (default %(default)s, arena up's)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    add_limit_arguments(p)
    p.set_defaults(func=cmd_series)


def _progress(out: TextIO, total: int, sprt: Sprt | None) -> Callable[[SeriesScore, MatchOutcome], None]:
    def on_match(score: SeriesScore, outcome: MatchOutcome) -> None:
        extra = ""
        if sprt is not None:
            b = sprt.bounds
            extra = f", LLR {sprt.llr(score.state):+.2f} in ({b.lower:.2f}, {b.upper:.2f})"
        print(f"{progress_bar(score.state.n, total)} {score.line()}{extra}", file=out, flush=True)

    return on_match


def cmd_series(args: argparse.Namespace) -> int:
    try:
        bots = resolve_bots(args.bots)
        options = parse_options(args.option)
        get_ruleset(args.ruleset, options)
        sprt = Sprt(args.mu0, args.mu1, args.alpha, args.beta) if args.sprt else None
        if args.boards < 1 or args.concurrency < 1 or args.boards_per_match < 1:
            raise ValueError("--boards, --concurrency and --boards-per-match must each be at least 1")
        base = match_settings(
            args, ruleset=args.ruleset, options=options, seed=args.seed, duplicate=True, scale=args.scale, deals=1
        )
        base.validate()
    except (ManifestError, RulesetError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    try:
        result = play_series(
            bots,
            base,
            args.boards,
            args.boards_per_match,
            args.concurrency,
            sprt,
            on_match=None if args.quiet else _progress(sys.stderr, args.boards, sprt),
        )
    except BotStartError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    names = [b if isinstance(b, str) else b.name for b in bots]
    print(
        f"Series {names[0]} vs {names[1]}, {args.ruleset}, scale {args.scale}: {result.score.state.n} boards "
        f"in {result.matches} matches"
    )
    print(f"  {result.score.line()}")
    for why in result.forfeits:
        print(f"  forfeit: {why}")
    code = EXIT_DONE
    if sprt is not None:
        assert result.verdict is not None
        said = {
            Verdict.H1: f"H1 accepted: {names[0]} is stronger (mean board score {sprt.mu1} or more)",
            Verdict.H0: f"H0 accepted: {names[0]} is not stronger by {sprt.mu1} (mean board score {sprt.mu0})",
            Verdict.CONTINUE: f"undecided after {result.score.state.n} boards",
        }[result.verdict]
        print(f"  SPRT H0 {sprt.mu0} H1 {sprt.mu1} alpha {sprt.alpha} beta {sprt.beta}: LLR {result.llr:+.3f}; {said}")
        code = {Verdict.H1: EXIT_DONE, Verdict.H0: EXIT_H0, Verdict.CONTINUE: EXIT_UNDECIDED}[result.verdict]
    record = {
        "format": SERIES_FORMAT,
        "format_version": 1,
        "bots": names,
        "ruleset": args.ruleset,
        "options": options,
        "scale": args.scale,
        "seed": args.seed,
        "boards_per_match": args.boards_per_match,
        "summary": result.score.to_json(),
        "sprt": None
        if sprt is None
        else {
            "mu0": sprt.mu0,
            "mu1": sprt.mu1,
            "alpha": sprt.alpha,
            "beta": sprt.beta,
            "llr": result.llr,
            "bounds": [sprt.bounds.lower, sprt.bounds.upper],
            "verdict": result.verdict.value if result.verdict is not None else None,
        },
        "forfeits": result.forfeits,
        "boards": [b.to_json() for b in result.boards],
    }
    # Never into the working directory unasked: the data dir's series/, as arena match's matches/.
    path = Path(args.out) if args.out else Path(args.data_dir) / SERIES_DIR / f"series-{uuid.uuid4().hex[:8]}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(f"record of every board written to {path}", file=sys.stderr)
    return code
