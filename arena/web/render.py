"""HTML of the arena's web pages: Jinja2 templates (``arena/web/templates``) with autoescaping.

Every value reaches a page through a template, escaped for HTML by Jinja2 unless the template says
otherwise (it never does for anything from Redis): bot names, owners, ladder options and everything
inside a record were written by bots or their owners, not by us.  URL paths are quoted by the ``bot_url``
and ``replay_url`` filters.  The replay's data travels as JSON in a non-executed
``<script type=application/json>`` with ``<``, ``>`` and ``&`` escaped (``script_json``), so no string in it
can close the element.  The pages load nothing from other hosts (the arena may run without internet): CSS
and JS come from ``/static/``, plots are inline SVG whose geometry ``plot`` computes here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, urlencode

import jinja2
import markupsafe

from arena.model.replay import public_reason

# Sent with every page (by the web server and by `arena view`): nothing but our own files may load or run, so a
# string that slipped past escaping still cannot run a script.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; "
    "form-action 'self'"
)
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")

# The rows of a bot's statistics table: key of BotStatsSummary, label, format.
STAT_ROWS = (
    ("matches", "Matches", "{}"),
    ("forfeits", "Matches lost by forfeit", "{}"),
    ("deals", "Deals played", "{}"),
    ("points_per_deal", "Average points per deal", "{:.1f}"),
    ("contracts_bid", "Contracts bid", "{}"),
    ("contracts_made", "Contracts made", "{}"),
    ("contract_make_rate", "Contracts made / bid", "{:.0%}"),
    ("capots", "Capots", "{}"),
    ("declarations", "Declarations", "{}"),
    ("timeouts", "Timeouts", "{}"),
    ("illegal_actions", "Illegal actions", "{}"),
    ("errors", "Errors (unreachable, bad replies)", "{}"),
    ("latency_p50_ms", "Latency p50", "{:.1f} ms"),
    ("latency_p99_ms", "Latency p99", "{:.1f} ms"),
    ("latency_max_ms", "Latency max", "{:.1f} ms"),
)


def bot_url(name: str) -> str:
    return "/bots/" + quote(name, safe="")


def replay_url(match_id: str) -> str:
    return "/replay/" + quote(match_id, safe="")


def when(ts: float | None) -> str:
    if not ts:
        return "—"
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M")


def ladder_caption(config: Mapping[str, Any] | None) -> str:
    if not config:
        return "settings not recorded"
    parts = [str(config.get("ruleset") or config.get("variant", "?"))]
    if config.get("deals"):
        parts.append(f"{config['deals']} deals")
    elif config.get("target"):
        parts.append(f"to {config['target']}")
    if config.get("duplicate"):
        parts.append("duplicate")
    opts = config.get("options") or {}
    if isinstance(opts, Mapping) and opts:
        parts.append(", ".join(f"{k}={v}" for k, v in sorted(opts.items())))
    return " · ".join(parts)


def script_json(data: object) -> markupsafe.Markup:
    """JSON safe inside a <script> element: nothing in it can close the element or open a comment."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return markupsafe.Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


def sides(seats: Sequence[str]) -> list[list[str]]:
    """The distinct bots of side 0 (seats 0, 2) and side 1 (seats 1, 3)."""
    return [list(dict.fromkeys((seats[0], seats[2]))), list(dict.fromkeys((seats[1], seats[3])))]


def side_names(payload: Mapping[str, Any]) -> list[str]:
    """A replay's two sides as people read them: "alpha & beta", or "alpha" for a self-partnered bot."""
    names = payload["names"]
    return [" & ".join(names.get(b, b) for b in side) for side in sides(payload["seats"])]


def points(history: Sequence[Mapping[str, float]], key: str) -> list[tuple[float, float]]:
    """(time, value) pairs of a rating history, for ``plot``."""
    return [(p["ts"], p[key]) for p in history]


def sigma_band(history: Sequence[Mapping[str, float]], k: float = 2.0) -> list[tuple[float, float, float]]:
    """(time, mu - k sigma, mu + k sigma) of a rating history: the band ``plot`` shades (k = 2: ~95 %)."""
    return [(p["ts"], p["mu"] - k * p["sigma"], p["mu"] + k * p["sigma"]) for p in history]


# --------------------------------------------------------------------------- plots


@dataclass(frozen=True)
class Line:
    label: str
    short: str  # for the legend
    color: str
    path: str
    marks: tuple[tuple[str, str], ...]  # circle centres
    legend_y: int


@dataclass(frozen=True)
class Band:
    """A shaded range under the lines (a rating's μ ± 2σ), drawn as steps like the lines."""

    label: str
    color: str
    path: str  # a closed outline: along the top, then back along the bottom


@dataclass(frozen=True)
class Plot:
    """An SVG plot's geometry, every number already formatted (templates/macros.html draws it)."""

    title: str
    width: int
    height: int
    left: int
    top: int
    pw: int
    ph: int
    y_ticks: tuple[tuple[str, str, str], ...]  # (y of the grid line, y of the label, label)
    x_labels: tuple[tuple[str, str, str], ...]  # (x, text-anchor, date)
    lines: tuple[Line, ...]
    bands: tuple[Band, ...] = ()


def plot(
    series: Sequence[tuple[str, Sequence[tuple[float, float]]]],
    title: str,
    width: int = 760,
    height: int = 260,
    bands: Sequence[tuple[str, Sequence[tuple[float, float, float]]]] = (),
) -> Plot | None:
    """Lines of (unix time, value), and shaded ``bands`` of (unix time, low, high), or None when there is
    no point at all.

    Drawn as steps held to the right edge: a rating is constant between two matches, and a bot that
    played once still gets a visible line (from its prior, when the caller puts it first).  A band takes
    the colour of the line of the same position."""
    pts = [p for _label, s in series for p in s]
    pts += [(t, v) for _label, b in bands for t, lo, hi in b for v in (lo, hi)]
    if not pts:
        return None
    left, right, top, bottom = 48, 170, 14, 30
    pw, ph = width - left - right, height - top - bottom
    x0, x1 = min(p[0] for p in pts), max(p[0] for p in pts)
    y0, y1 = min(p[1] for p in pts), max(p[1] for p in pts)
    if x1 - x0 < 1e-9:
        x0, x1 = x0 - 1, x1 + 1
    pad = max((y1 - y0) * 0.08, 0.5)
    y0, y1 = y0 - pad, y1 + pad

    def sx(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * pw

    def sy(y: float) -> float:
        return top + (1 - (y - y0) / (y1 - y0)) * ph

    lines = []
    for i, (label, s) in enumerate(series):
        if not s:
            continue
        path = f"M{sx(s[0][0]):.1f},{sy(s[0][1]):.1f}" + "".join(f"H{sx(x):.1f}V{sy(y):.1f}" for x, y in s[1:])
        marks = s if len(s) <= 40 else s[-1:]
        lines.append(
            Line(
                label=label,
                short=label if len(label) <= 20 else label[:19] + "…",
                color=PALETTE[i % len(PALETTE)],
                path=f"{path}H{left + pw}",
                marks=tuple((f"{sx(x):.1f}", f"{sy(y):.1f}") for x, y in marks),
                legend_y=top + 8 + i * 18,
            )
        )
    shaded = []
    for i, (label, b) in enumerate(bands):
        if not b:
            continue
        # Along the top from the left, to the right edge, down, and back along the bottom; a step at each
        # point, as the lines have.
        path = f"M{sx(b[0][0]):.1f},{sy(b[0][2]):.1f}" + "".join(f"H{sx(t):.1f}V{sy(hi):.1f}" for t, _lo, hi in b[1:])
        path += f"H{left + pw}V{sy(b[-1][1]):.1f}"
        path += "".join(f"H{sx(b[k][0]):.1f}V{sy(b[k - 1][1]):.1f}" for k in range(len(b) - 1, 0, -1))
        shaded.append(Band(label, PALETTE[i % len(PALETTE)], f"{path}H{sx(b[0][0]):.1f}Z"))
    return Plot(
        title=title,
        width=width,
        height=height,
        left=left,
        top=top,
        pw=pw,
        ph=ph,
        y_ticks=tuple((f"{sy(t):.1f}", f"{sy(t) + 4:.1f}", f"{t:g}") for t in _ticks(y0, y1)),
        x_labels=tuple((f"{sx(x):.1f}", anchor, when(x)) for x, anchor in ((x0, "start"), (x1, "end"))),
        lines=tuple(lines),
        bands=tuple(shaded),
    )


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    return [round(first + i * step, 6) for i in range(n + 2) if first + i * step <= hi]


# ------------------------------------------------------------------------- templates


def environment() -> jinja2.Environment:
    """The templates, autoescaped, failing loudly on an undefined name (a typo is a bug, not a blank)."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("arena.web", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        bot_url=bot_url,
        replay_url=replay_url,
        when=when,
        caption=ladder_caption,
        urlencode_query=lambda q: urlencode({k: v for k, v in q.items() if v}),
        script_json=script_json,
        sides=sides,
        side_names=side_names,
        points=points,
        sigma_band=sigma_band,
        fmt=lambda v, f: f.format(v),
        public_reason=public_reason,
    )
    env.globals.update(plot=plot, STAT_ROWS=STAT_ROWS)
    return env


class Pages:
    """Renders the pages (the templates are loaded and compiled once)."""

    def __init__(self) -> None:
        self.env = environment()

    def render(self, template: str, **context: object) -> str:
        return self.env.get_template(template).render(**context)
