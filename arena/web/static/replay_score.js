// The replay viewer's score parts (loaded before replay.js): the arithmetic of a deal's written points and
// the duplicate table of boards (docs/web.md).
//
// Everything here is read from the record's fields: a contract's multiplier and bidder, a score's card
// points, declarations, belote, multiplier and written points. The arithmetic is the record's own parts put
// into the one form the rules give them ("(card points + declarations) × multiplier + belote"); it is shown
// only where those parts make exactly the written points, and otherwise the written points alone with a
// pointer to the referee's notes, so the page never states a sum the record does not.
"use strict";
window.ReplayScore = (function () {
  const SEATS = ["South", "East", "North", "West"];
  const STRAIN = { C: "♣", D: "♦", H: "♥", S: "♠", NT: "no trump", AT: "all trump" };
  const MULTIPLIED = { 2: "contra", 4: "surcontra" };

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // "a + b", leaving out parts that are 0 (but not the first), a negative part as "− 20".
  function sum(parts) {
    let out = "";
    parts.forEach((p, i) => {
      if (i > 0 && p === 0) return;
      if (i === 0) out = String(p);
      else out += p < 0 ? " − " + -p : " + " + p;
    });
    return out;
  }
  function form(multiplied, mult, added) {
    const inner = sum(multiplied);
    const head = mult > 1 ? (/ [+−] /.test(inner) ? "(" + inner + ")" : inner) + " × " + mult : inner;
    const rest = sum([0, ...added]).slice(1);
    return head + rest;
  }

  // The arithmetic of what side `s` wrote for a scored deal, as text ending "= written", or null when the
  // record's parts do not make the written points in the rules' form (a ruleset that adds the bid, rounds,
  // or hangs points: the notes say how).
  function arithmetic(deal, s) {
    const sc = deal.score, c = deal.contract;
    if (!sc || !c) return null;
    const cp = sc.card_points, decl = sc.declarations, bel = sc.belote, m = sc.multiplier || 1;
    const w = sc.written[s], bidders = c.bidder & 1;
    if ((cp[s] + decl[s]) * m + bel[s] === w) return form([cp[s], decl[s]], m, [bel[s]]) + " = " + w;
    if (sc.contract_made === false && s !== bidders) {
      // Failed: the defenders write the whole deal (both sides' card points) and every belote.
      const whole = cp[0] + cp[1];
      if ((whole + decl[s]) * m + bel[0] + bel[1] === w) return form([whole, decl[s]], m, [bel[0], bel[1]]) + " = " + w;
    }
    if (sc.contract_made === false && s === bidders && w === 0) return "0 (the contract failed)";
    return null;
  }

  // The lines of a deal's arithmetic, one per side; `label(s)` names side s.
  function arithmeticLines(deal, label) {
    return [0, 1].map((s) => {
      const a = arithmetic(deal, s);
      return label(s) + ": " + (a === null ? deal.score.written[s] + " (see the notes)" : a);
    });
  }

  function details(summary, lines) {
    const d = el("details", "arithmetic");
    d.append(el("summary", "", summary), ...lines.map((t) => el("div", "", t)));
    return d;
  }

  // A contract as the duplicate table gives it: value, strain and its multiplier ("250 ♦ ×4").
  function contractCell(c) {
    if (!c) return el("td", "contract", "thrown in");
    const td = el("td", "contract", (c.value ? c.value + " " : "") + (STRAIN[c.strain] || c.strain));
    if (c.multiplier > 1) {
      const m = el("span", "mult", " ×" + c.multiplier);
      m.title = MULTIPLIED[c.multiplier] || "multiplied";
      td.append(m);
    }
    return td;
  }

  // The table of boards of a duplicate match: per board and table the contract with its multiplier, the
  // declarer, the points per team, then the margin, the board's score and the arithmetic on demand.
  // `onPick(leg, board)` opens a board at a table.
  function duplicateTable(data, legs, current, onPick) {
    const team = (t) => [...new Set([legs[0].players[t], legs[0].players[t + 2]])].join(" & ");
    const table = el("table", "dup");
    const head = el("tr");
    ["Board", "Table 1", "Declarer", team(0), team(1), "Table 2", "Declarer", team(0), team(1), "Margin", "How"]
      .forEach((t) => head.append(el("th", "", t)));
    table.append(head);
    data.duplicate.forEach((b) => {
      const tr = el("tr", "board-row" + (b.board === current.board && legs.length === 2 ? " now" : ""));
      tr.dataset.board = String(b.board + 1);
      tr.append(el("td", "", String(b.board + 1)));
      const how = [];
      [0, 1].forEach((t) => {
        const c = b.contracts[t], lg = legs[t];
        const cells = [contractCell(c),
          el("td", "declarer", c ? SEATS[c.bidder] + " · " + (lg ? lg.players[c.bidder] : "") : "—"),
          el("td", "num", String(b.points[t][0])), el("td", "num", String(b.points[t][1]))];
        cells.forEach((x) => { x.dataset.leg = String(Math.min(t, legs.length - 1) + 1); });
        tr.append(...cells);
        const deal = lg && lg.deals[b.board];
        // Team 0 holds side 0 at table 1 and side 1 at table 2.
        if (deal && deal.score) how.push(...arithmeticLines(deal, (s) => "table " + (t + 1) + ", " + team(s ^ t)));
      });
      tr.append(el("td", "num margin", (b.margin > 0 ? "+" : "") + b.margin));
      const cell = el("td", "how");
      if (how.length) cell.append(details("sums", how));
      tr.append(cell);
      tr.addEventListener("click", (e) => {
        if (e.target.closest("details")) return;  // opening the sums does not move the viewer
        const td = e.target.closest("td");
        onPick(td && td.dataset.leg ? Number(td.dataset.leg) - 1 : 0, b.board);
      });
      table.append(tr);
    });
    const box = el("div", "scroll dup-box");
    box.append(table);
    return box;
  }

  return { arithmetic, arithmeticLines, details, duplicateTable };
})();
