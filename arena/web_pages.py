"""HTML of the arena's web pages, rendered on the server as plain strings.

Every value that comes from Redis goes through ``esc`` (HTML) or ``quote`` (URL path) before it reaches a
page: bot names, owners, ladder options and everything inside a record were written by bots or their
owners, not by us.  The replay's data travels as JSON in a non-executed ``<script type=application/json>``
with ``<``, ``>`` and ``&`` escaped, so no string in it can close the element.  The pages load nothing from
other hosts (the arena may run without internet): CSS and JS come from ``/static/``, plots are inline SVG.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, urlencode

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")


def esc(v: object) -> str:
    return html.escape(str(v), quote=True)


def bot_url(name: str) -> str:
    return "/bots/" + quote(name, safe="")


def replay_url(match_id: str) -> str:
    return "/replay/" + quote(match_id, safe="")


def when(ts: float | None) -> str:
    if not ts:
        return "—"
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M")


def layout(title: str, body: str, active: str = "") -> str:
    def nav(href: str, label: str, key: str) -> str:
        cls = ' class="active"' if key == active else ""
        return f'<a href="{href}"{cls}>{label}</a>'

    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)} · pilotta-arena</title>"
        '<link rel="icon" href="data:,"><link rel="stylesheet" href="/static/style.css"></head><body>'
        '<header><span class="logo">♠♥ pilotta-arena</span><nav>'
        + nav("/", "Leaderboard", "leaderboard")
        + nav("/matches", "Matches", "matches")
        + f"</nav></header><main>{body}</main>"
        "<footer>Ratings: openskill (Plackett-Luce); rank by μ−3σ. "
        'Data as JSON under <a href="/api/leaderboard">/api/</a>.</footer></body></html>\n'
    )


def error_page(status: int, title: str, message: str) -> str:
    body = (
        f'<h1>{status} · {esc(title)}</h1><p class="error" id="error">{esc(message)}</p>'
        '<p><a href="/">Back to the leaderboard</a></p>'
    )
    return layout(title, body)


def ladder_caption(config: Mapping[str, Any] | None) -> str:
    if not config:
        return "settings not recorded"
    parts = [str(config.get("variant", "?"))]
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


# --------------------------------------------------------------------------- plots


def svg_plot(
    series: Sequence[tuple[str, Sequence[tuple[float, float]]]], title: str, width: int = 760, height: int = 260
) -> str:
    """Lines of (unix time, value) as inline SVG, with y grid, dates and a legend.

    Drawn as steps held to the right edge: a rating is constant between two matches, and a bot that
    played once still gets a visible line (from its prior, when the caller puts it first)."""
    pts = [p for _label, s in series for p in s]
    if not pts:
        return '<p class="muted">No rated matches yet.</p>'
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

    out = [
        f'<svg class="plot" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{esc(title)}</title>'
    ]
    for tick in _ticks(y0, y1):
        y = sy(tick)
        out.append(
            f'<line x1="{left}" x2="{left + pw}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e3e3e3"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11" fill="#555">'
            f"{tick:g}</text>"
        )
    out.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#bbb"/>')
    for x, anchor in ((x0, "start"), (x1, "end")):
        out.append(
            f'<text x="{sx(x):.1f}" y="{height - 10}" text-anchor="{anchor}" font-size="11" '
            f'fill="#555">{esc(when(x))}</text>'
        )
    for i, (label, s) in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        path = f"M{sx(s[0][0]):.1f},{sy(s[0][1]):.1f}" + "".join(f"H{sx(x):.1f}V{sy(y):.1f}" for x, y in s[1:])
        out.append(
            f'<g class="series"><title>{esc(label)}</title><path d="{path}H{left + pw}" fill="none" '
            f'stroke="{color}" stroke-width="2" stroke-linejoin="round"/>'
        )
        marks = s if len(s) <= 40 else s[-1:]
        out.extend(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="2.5" fill="{color}"/>' for x, y in marks)
        out.append("</g>")
        ly = top + 8 + i * 18
        short = label if len(label) <= 20 else label[:19] + "…"
        out.append(
            f'<rect x="{left + pw + 12}" y="{ly - 8}" width="12" height="4" fill="{color}"/>'
            f'<text x="{left + pw + 30}" y="{ly - 2}" font-size="12" fill="#222">{esc(short)}</text>'
        )
    out.append("</svg>")
    return "".join(out)


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    return [round(first + i * step, 6) for i in range(n + 2) if first + i * step <= hi]


# ---------------------------------------------------------------------- leaderboard


def leaderboard_page(sections: Sequence[Mapping[str, Any]]) -> str:
    """``sections``: per ladder ``{ladder, config, rows, histories: {bot_id: [points]}}``."""
    if not sections:
        return layout("Leaderboard", '<h1>Leaderboard</h1><p class="muted">No ladders yet.</p>', "leaderboard")
    parts = ["<h1>Leaderboard</h1>"]
    for sec in sections:
        lid = sec["ladder"]
        parts.append(
            f'<section class="ladder" id="ladder-{esc(lid)}"><h2>Ladder {esc(lid)}</h2>'
            f'<p class="muted">{esc(ladder_caption(sec["config"]))} · '
            f'<a href="/matches?{urlencode({"ladder": lid})}">matches</a></p>'
        )
        rows = sec["rows"]
        if not rows:
            parts.append('<p class="muted">No rated matches yet.</p></section>')
            continue
        parts.append(
            '<table class="board"><thead><tr><th>#</th><th>Bot</th><th title="μ−3σ: the ranking key">'
            "Rating (μ−3σ)</th><th>± σ</th><th>μ</th><th>Games</th><th>W / L / D</th>"
            "<th>Last played</th></tr></thead><tbody>"
        )
        for row in rows:
            parts.append(
                f'<tr><td>{row["rank"]}</td><td><a href="{esc(bot_url(row["name"]))}">{esc(row["name"])}</a></td>'
                f'<td class="num strong">{row["conservative"]:.2f}</td><td class="num">± {row["sigma"]:.2f}</td>'
                f'<td class="num">{row["mu"]:.2f}</td><td class="num">{row["games"]}</td>'
                f'<td class="num">{row["wins"]} / {row["losses"]} / {row["draws"]}</td>'
                f"<td>{esc(when(row['last_played']))}</td></tr>"
            )
        parts.append("</tbody></table>")
        names = {r["bot_id"]: r["name"] for r in rows}
        series = [
            (names.get(b, b), [(p["ts"], p["conservative"]) for p in pts]) for b, pts in sec["histories"].items() if pts
        ]
        parts.append("<h3>Rating over time (μ−3σ)</h3>" + svg_plot(series, f"Rating over time on {lid}") + "</section>")
    return layout("Leaderboard", "".join(parts), "leaderboard")


# --------------------------------------------------------------------------- matches


def matches_table(matches: Sequence[Mapping[str, Any]], names: Mapping[str, str]) -> str:
    if not matches:
        return '<p class="muted">No matches recorded.</p>'
    out = [
        '<table class="matches"><thead><tr><th>Finished (UTC)</th><th>Match</th><th>Ladder</th>'
        "<th>Side 0 (S/N)</th><th>Side 1 (E/W)</th><th>Score</th><th>Winner</th><th>Deals</th>"
        "</tr></thead><tbody>"
    ]
    for m in matches:
        seats = m["seats"]
        sides = [list(dict.fromkeys((seats[0], seats[2]))), list(dict.fromkeys((seats[1], seats[3])))]
        links = [
            ", ".join(f'<a href="{esc(bot_url(names.get(b, b)))}">{esc(names.get(b, b))}</a>' for b in side)
            for side in sides
        ]
        w = m.get("winner")
        winner = "draw" if w is None else f"side {w}"
        if m.get("forfeit"):
            winner += f' <span class="warn" title="{esc(m["forfeit"])}">forfeit</span>'
        pts = m.get("points") or ["?", "?"]
        cls = [' class="won"' if w == s else "" for s in (0, 1)]
        out.append(
            f"<tr><td>{esc(when(m.get('finished')))}</td>"
            f'<td><a href="{esc(replay_url(m["match_id"]))}">{esc(m["match_id"])}</a></td>'
            f"<td>{esc(m.get('ladder', ''))}</td><td{cls[0]}>{links[0]}</td><td{cls[1]}>{links[1]}</td>"
            f'<td class="num">{esc(pts[0])} – {esc(pts[1])}</td><td>{winner}</td>'
            f'<td class="num">{esc(m.get("deals_played", ""))}</td></tr>'
        )
    out.append("</tbody></table>")
    return "".join(out)


def matches_page(
    matches: Sequence[Mapping[str, Any]],
    names: Mapping[str, str],
    ladders: Sequence[str],
    ladder: str | None,
    bot_name: str | None,
    cursor: str | None,
) -> str:
    opts = ['<option value="">all ladders</option>'] + [
        f'<option value="{esc(lid)}"{" selected" if lid == ladder else ""}>{esc(lid)}</option>' for lid in ladders
    ]
    form = (
        '<form class="filters" method="get" action="/matches"><label>Ladder <select name="ladder">'
        + "".join(opts)
        + '</select></label> <label>Bot <input name="bot" value="'
        + esc(bot_name or "")
        + '" placeholder="bot name"></label> <button type="submit">Filter</button></form>'
    )
    more = ""
    if cursor:
        q = {k: v for k, v in (("ladder", ladder), ("bot", bot_name), ("before", cursor)) if v}
        more = f'<p><a id="older" href="/matches?{esc(urlencode(q))}">Older matches →</a></p>'
    return layout("Matches", "<h1>Matches</h1>" + form + matches_table(matches, names) + more, "matches")


# -------------------------------------------------------------------------------- bot


_STAT_ROWS = (
    ("matches", "Matches", "{}"),
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


def bot_page(
    bot: Mapping[str, Any],
    ladders: Sequence[Mapping[str, Any]],
    histories: Mapping[str, list[Any]],
    matches: Sequence[Mapping[str, Any]],
    names: Mapping[str, str],
) -> str:
    name = bot["name"]
    status = '<span class="warn">retired</span>' if bot["retired"] else "active"
    parts = [
        f"<h1>Bot {esc(name)}</h1>",
        f'<p class="muted">id {esc(bot["bot_id"])} · owner {esc(bot["owner"])} · version {bot["version"]} · '
        f"registered {esc(when(bot['created']))} · {status}</p>",
    ]
    if not ladders:
        parts.append('<p class="muted">This bot has not played a rated match yet.</p>')
    for lad in ladders:
        lid, rt, st = lad["ladder"], lad["rating"], lad["stats"]
        parts.append(
            f'<section class="ladder"><h2>Ladder {esc(lid)}: rank {lad["rank"]}</h2><div class="cols">'
            '<table class="kv"><tbody>'
            f'<tr><th>Rating (μ−3σ)</th><td class="num strong">{rt["conservative"]:.2f}</td></tr>'
            f'<tr><th>μ ± σ</th><td class="num">{rt["mu"]:.2f} ± {rt["sigma"]:.2f}</td></tr>'
            f'<tr><th>Games</th><td class="num">{rt["games"]}</td></tr>'
            f'<tr><th>W / L / D</th><td class="num">{rt["wins"]} / {rt["losses"]} / {rt["draws"]}</td></tr>'
            '</tbody></table><table class="kv stats"><tbody>'
        )
        for key, label, fmt in _STAT_ROWS:
            parts.append(f'<tr><th>{label}</th><td class="num" data-stat="{key}">{fmt.format(st[key])}</td></tr>')
        parts.append("</tbody></table>")
        pts = histories.get(lid, [])
        series = [("μ", [(p["ts"], p["mu"]) for p in pts]), ("μ−3σ", [(p["ts"], p["conservative"]) for p in pts])]
        parts.append(
            f"<div><h3>Rating over time</h3>{svg_plot(series, f'Rating of {name} on {lid}', 500, 260)}"
            "</div></div></section>"
        )
    parts.append(
        f"<h2>Recent matches</h2>{matches_table(matches, names)}"
        f'<p><a href="/matches?{esc(urlencode({"bot": name}))}">All matches of {esc(name)} →</a></p>'
    )
    return layout(f"Bot {name}", "".join(parts))


# ----------------------------------------------------------------------------- replay


def script_json(data: object) -> str:
    """JSON safe inside a <script> element: nothing in it can close the element or open a comment."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def replay_page(payload: Mapping[str, Any]) -> str:
    mid = payload["match_id"]
    names = payload["names"]
    seats = payload["seats"]
    sides = [" & ".join(dict.fromkeys(names.get(b, b) for b in (seats[s], seats[s + 2]))) for s in (0, 1)]
    pts = payload.get("points") or ["?", "?"]
    w = payload.get("winner")
    head = (
        f'<h1>Match {esc(mid)}</h1><p class="muted">ladder {esc(payload["ladder"])} · '
        f"finished {esc(when(payload.get('finished')))} · {esc(sides[0])} vs {esc(sides[1])} · "
        f"final <strong>{esc(pts[0])} – {esc(pts[1])}</strong> · "
        f"{'draw' if w is None else 'won by ' + esc(sides[w])}"
        + (f' · <span class="warn">forfeit: {esc(payload["forfeit"])}</span>' if payload.get("forfeit") else "")
        + "</p>"
    )
    if not payload["legs"]:
        return layout(f"Match {mid}", head + '<p class="muted" id="no-replay">No replay is stored for this match.</p>')
    seat_boxes = "".join(
        f'<div class="seat seat-{pos}" id="seat-{s}"><div class="who"><span class="seat-name" id="name-{s}"></span>'
        f'<span class="badge" id="badge-{s}" title="dealer"></span></div><div class="hand" id="hand-{s}"></div></div>'
        for s, pos in ((2, "n"), (3, "w"), (1, "e"), (0, "s"))
    )
    body = (
        head + '<div class="controls"><label>Deal <select id="deal-select"></select></label>'
        '<button id="first" title="first step (Home)">« First</button>'
        '<button id="prev" title="previous (←)">◀ Prev</button>'
        '<span id="step" class="step"></span><button id="next" title="next (→)">Next ▶</button>'
        '<button id="last" title="end of the deal (End)">Last »</button></div>'
        '<div id="action" class="action"></div>'
        '<div class="replay"><div class="felt">'
        + seat_boxes
        + '<div class="trick" id="trick"></div></div><div class="panels">'
        '<section><h3>Auction</h3><div id="auction"></div><p id="contract"></p></section>'
        '<section><h3>Declarations</h3><div id="declarations"></div></section>'
        '<section><h3>Tricks</h3><div id="tricks"></div></section>'
        '<section><h3>Score</h3><div id="score"></div></section></div></div>'
        f'<script id="replay-data" type="application/json">{script_json(payload)}</script>'
        '<script src="/static/replay.js"></script>'
    )
    return layout(f"Match {mid}", body)
