// Replay viewer: steps through the deals of a game record (docs/game-record.md, docs/web.md).
//
// The page embeds the payload of arena/replay.py as JSON: the record's deals (without the deck) and, per
// deal, the facts the referee's rules derive from it (trick winners and points, declarations' kinds and
// points, the hands before the auction).  The viewer states nothing else: it only counts what it is given.
// Step k shows a deal after its first k actions, recomputed from the hands as dealt each time (a deal has
// at most a few dozen actions), so going back is as exact as going on.  Every string from the record is
// put in the page with textContent, never innerHTML: bots choose their comments and their names.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("replay-data").textContent);
  const SEATS = ["South", "East", "North", "West"];
  const SIDES = ["N/S", "E/W"];
  const SUIT = { C: "♣", D: "♦", H: "♥", S: "♠" };
  const STRAIN = { C: "♣", D: "♦", H: "♥", S: "♠", NT: "no trump", AT: "all trump" };
  const RANK = { T: "10" };
  const TRUMP_ORDER = "J9ATKQ87", PLAIN_ORDER = "ATKQJ987", SUIT_ORDER = "SHCD";
  const AUCTION = /^(pass|bid|contra|surcontra)\b/;
  // Rulesets where a bid names only a suit taken as trump (the turned card's, or another).
  const TAKING = { french: true, bela: true };
  const WHY = {
    timeout: "no answer in time",
    illegal_action: "the answer was not a legal action",
    malformed_reply: "the answer could not be read",
  };
  const $ = (id) => document.getElementById(id);
  const legs = data.legs;
  let leg = 0, dealNo = 0, step = 0, view = "all", timer = null;

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function replace(node, ...children) { node.replaceChildren(...children); }
  function pretty(code) {
    return code.replace(/\b([789TJQKA])([CDHS])\b/g, (_, r, s) => (RANK[r] || r) + SUIT[s])
      .replace(/^bid (\d+ )?(C|D|H|S|NT|AT)$/, (_, v, s) => "bid " + (v || "") + STRAIN[s]);
  }
  function current() { return legs[leg].deals[dealNo]; }
  function players() { return legs[leg].players; }
  function rulesetName() { return (legs[leg].ruleset || {}).name || ""; }
  function who(seat) { return SEATS[seat] + " (" + players()[seat] + ")"; }
  function trumpOf(deal) {
    const c = deal.contract;
    return c && SUIT[c.strain] ? c.strain : null;
  }
  function card(code, trump) {
    const c = el("span", "card" + ("HD".includes(code[1]) ? " red" : "") + (code[1] === trump ? " trump" : ""));
    c.dataset.card = code;
    c.title = code;
    c.append(el("span", "r", RANK[code[0]] || code[0]), el("span", "s", SUIT[code[1]] || code[1]));
    return c;
  }
  // A hand as a card player holds it: trump first, then the other suits; strongest card first in each
  // (the trump order in the trump suit, and in every suit at all trump).
  function sorted(cards, deal) {
    const c = deal.contract, trump = trumpOf(deal), all = c && c.strain === "AT";
    const suitKey = (s) => (s === trump ? -1 : SUIT_ORDER.indexOf(s));
    const rankKey = (x) => (all || x[1] === trump ? TRUMP_ORDER : PLAIN_ORDER).indexOf(x[0]);
    return cards.slice().sort((a, b) => suitKey(a[1]) - suitKey(b[1]) || rankKey(a) - rankKey(b));
  }
  function callText(code) {
    const m = /^bid (C|D|H|S)$/.exec(code);
    if (m && TAKING[rulesetName()]) return "takes " + SUIT[m[1]];
    return pretty(code).replace(/^bid /, "");
  }
  function contractText(c) {
    const mult = { 2: " · contra", 4: " · surcontra" }[c.multiplier] || "";
    if (!c.value && TAKING[rulesetName()] && SUIT[c.strain]) return who(c.bidder) + " takes " + SUIT[c.strain] + mult;
    return (c.value ? c.value + " " : "") + STRAIN[c.strain] + " by " + who(c.bidder) + mult;
  }
  function seen(seat) { return view === "all" || Number(view) === seat; }

  // The number of actions that make the auction: the calls before the first declaration or card; the whole
  // deal when it ended in the auction (thrown in); null while it is still open (a forfeit stopped it).
  function auctionLength(deal) {
    const i = deal.actions.findIndex((a) => !AUCTION.test(a.action));
    if (i >= 0) return i;
    return deal.contract || deal.thrown_in ? deal.actions.length : null;
  }

  // The state after the first k actions of the current deal.
  function stateAt(k) {
    const deal = current(), facts = deal.facts;
    const alen = auctionLength(deal);
    const auctionOver = alen !== null && k >= alen;
    const start = !auctionOver && facts && facts.first_hands ? facts.first_hands : deal.hands;
    const hands = start.map((h) => h.slice());
    const plays = [], declared = [];
    deal.actions.slice(0, k).forEach((a) => {
      const code = a.action;
      if (code.startsWith("declare ")) { declared.push({ seat: a.seat, code }); return; }
      if (code.startsWith("play ")) {
        const c = code.split(" ")[1];
        const h = hands[a.seat], at = h.indexOf(c);
        if (at >= 0) h.splice(at, 1);
        plays.push({ seat: a.seat, card: c, belote: code.endsWith(" belote"), ms: a.ms });
      }
    });
    const tricks = [];
    for (let i = 0; i + 4 <= plays.length; i += 4) tricks.push(plays.slice(i, i + 4));
    const n = plays.length;
    const trick = n ? plays.slice(Math.floor((n - 1) / 4) * 4) : [];
    return { hands, tricks, trick, declared, auctionOver, alen, finished: k === deal.actions.length };
  }

  // The step just after the i-th trick's last card (i from 0), and the steps where tricks end.
  function trickEnds(deal) {
    const ends = [];
    let plays = 0;
    deal.actions.forEach((a, i) => {
      if (a.action.startsWith("play ") && ++plays % 4 === 0) ends.push(i + 1);
    });
    return ends;
  }

  function fillSelect() {
    const sel = $("deal-select");
    legs.forEach((lg, li) => lg.deals.forEach((d, di) => {
      const o = el("option", "", (legs.length > 1 ? "Leg " + (li + 1) + " · " : "") + "Deal " + (di + 1) +
        (d.thrown_in ? " (thrown in)" : ""));
      o.value = li + "." + di;
      sel.append(o);
    }));
    sel.addEventListener("change", () => {
      [leg, dealNo] = sel.value.split(".").map(Number);
      step = 0;
      render();
    });
    $("view-select").addEventListener("change", (e) => { view = e.target.value; render(); });
  }

  // The calls in rows of four, each under its own seat in speaking order from the seat after the dealer.
  // A seat that may not speak (a Pilotta pass is final) leaves its cell empty, marked "skipped".
  function renderAuction(st) {
    const deal = current();
    const order = [1, 2, 3, 4].map((x) => (deal.dealer + x) % 4);
    const grid = el("div", "calls");
    order.forEach((s) => grid.append(el("span", "hd", SEATS[s])));
    const upto = st.alen === null ? step : Math.min(step, st.alen);
    let col = -1;
    deal.actions.slice(0, upto).forEach((a, i) => {
      const at = order.indexOf(a.seat);
      if (at <= col) { for (let c = col + 1; c < 4; c++) grid.append(el("span", "skipped")); col = -1; }
      for (let c = col + 1; c < at; c++) grid.append(el("span", "skipped"));
      const cell = el("span", "call" + (i === step - 1 ? " now" : "") + (a.outcome ? " intervened" : ""), callText(a.action));
      if (a.ms !== undefined) cell.title = a.ms + " ms";
      grid.append(cell);
      col = at;
    });
    replace($("auction"), grid);
    const c = deal.contract;
    let text;
    if (!st.auctionOver) text = st.finished ? "The auction was stopped (forfeit)" : "Auction in progress";
    else if (c) text = "Contract: " + contractText(c);
    else text = "All passed: thrown in";
    $("contract").textContent = text;
  }

  function renderDeclarations(st) {
    const deal = current(), facts = deal.facts;
    const settled = st.tricks.length >= 1;
    const lines = [];
    st.declared.forEach((d) => {
      const mine = facts ? facts.declarations.filter((x) => x.seat === d.seat) : [];
      if (d.code === "declare none" || (facts && !mine.length)) {
        lines.push(el("div", "muted", SEATS[d.seat] + ": no declaration"));
        return;
      }
      if (!facts) { lines.push(el("div", "", SEATS[d.seat] + ": " + pretty(d.code.slice(8)))); return; }
      mine.forEach((x) => {
        const line = el("div", settled ? (x.credited ? "strong credited" : "muted not-credited") : "",
          SEATS[d.seat] + ": " + pretty(x.text));
        if (settled) line.append(el("span", "", x.credited ? " · credited" : " · not credited"));
        lines.push(line);
      });
    });
    const belotes = deal.belotes || [];
    if (st.finished) belotes.forEach((b) => lines.push(el("div", "",
      "belote " + SEATS[b.seat] + " " + SUIT[b.suit] + (b.completed ? " (counts)" : b.lost ? " (lost)" : ""))));
    else st.tricks.flat().concat(st.trick).filter((p) => p.belote).forEach((p) =>
      lines.push(el("div", "", "belote announced by " + SEATS[p.seat] + " with " + pretty(p.card))));
    replace($("declarations"), ...(lines.length ? lines : [el("span", "muted", "none yet")]));
  }

  // The tricks so far: cards by seat, the winner, the trick's card points (and the last trick's bonus),
  // as the rules count them (the payload's facts).  A row is a link to the end of that trick.
  function renderTricks(st) {
    const deal = current(), facts = deal.facts, trump = trumpOf(deal);
    const winners = legs[leg].trick_winners[dealNo] || [];
    const ends = trickEnds(deal);
    const table = el("table");
    st.tricks.forEach((t, i) => {
      const tr = el("tr", "trick-row" + (ends[i] === step ? " now" : ""));
      tr.dataset.step = String(ends[i]);
      tr.append(el("td", "", String(i + 1)));
      t.forEach((p) => {
        const td = el("td", ("HD".includes(p.card[1]) ? "suit-red" : "") + (p.card[1] === trump ? " trump" : ""), pretty(p.card));
        td.prepend(el("small", "muted", SEATS[p.seat][0] + " "));
        if (p.ms !== undefined) td.title = p.ms + " ms";
        tr.append(td);
      });
      const w = winners[i];
      tr.append(el("td", "strong", w === null || w === undefined ? "" : "→ " + SEATS[w][0]));
      const f = facts && facts.tricks[i];
      tr.append(el("td", "num pts", f ? String(f.points) + (f.bonus ? " +" + f.bonus : "") : ""));
      tr.addEventListener("click", () => go(ends[i]));
      table.append(tr);
    });
    replace($("tricks"), ...(st.tricks.length ? [table] : [el("span", "muted", "no trick yet")]));
    const shown = st.trick.map((p) => {
      const slot = el("div", "slot slot-" + p.seat);
      const c = card(p.card, trump);
      if (st.trick.length === 4 && winners[st.tricks.length - 1] === p.seat) c.classList.add("win");
      slot.append(c);
      return slot;
    });
    replace($("trick"), ...shown);
    const info = [];
    if (deal.turned_card && !st.auctionOver) {
      const t = el("div", "", "turned up ");
      t.append(card(deal.turned_card, null));
      info.push(t);
    }
    if (st.auctionOver && deal.contract) info.push(el("div", "trump-mark", "trump " + STRAIN[deal.contract.strain]));
    replace($("table-info"), ...info);
  }

  // A score note: words in records of format_version 1 and 2; from version 3 an object, its code and values
  // with the words ("text") rendered by the referee (docs/game-record.md). Without words, the code and values.
  function noteText(n) {
    if (typeof n === "string") return n;
    if (n && typeof n.text === "string") return n.text;
    if (!n || typeof n !== "object") return String(n);
    const values = Object.keys(n).filter((k) => k !== "code" && k !== "text").map((k) => k + " " + n[k]);
    return n.code + (values.length ? ": " + values.join(", ") : "");
  }

  function legResultText(res) {
    const f = res.forfeit;
    if (f) {
      const side = f.side === undefined ? f.seat & 1 : f.side, won = 1 - side;
      const names = (s) => [...new Set([players()[s], players()[s + 2]])].join(" & ");
      const head = who(f.seat) + " forfeited: " + f.reason + ". ";
      // A match without a winner despite a forfeit is void: bots of both teams could not play.
      if (data.winner === null || data.winner === undefined) return head + "No side wins: the match is void.";
      return head + names(won) + " (" + SIDES[won] + ") win " + res.scores.join(" – ") + ".";
    }
    if (res.winner === null || res.winner === undefined) return "Game over: draw " + res.scores.join(" – ") +
      (res.reason ? " (" + res.reason + ")" : "");
    const names = [...new Set([players()[res.winner], players()[res.winner + 2]])].join(" & ");
    return "Game over: " + names + " (" + SIDES[res.winner] + ") win " + res.scores.join(" – ") +
      (res.reason ? " (" + res.reason + ")" : "");
  }

  function renderScore(st) {
    const deal = current(), facts = deal.facts, lg = legs[leg];
    const prev = dealNo > 0 ? lg.deals[dealNo - 1].totals : null;
    const rows = [];
    const row = (label, v) => {
      const tr = el("tr");
      tr.append(el("th", "", label), el("td", "num", String(v[0])), el("td", "num", String(v[1])));
      rows.push(tr);
    };
    const head = el("tr");
    head.append(el("th"), el("th", "", SIDES[0]), el("th", "", SIDES[1]));
    rows.push(head);
    if (facts && st.tricks.length) {
      const taken = [0, 0];
      facts.tricks.slice(0, st.tricks.length).forEach((t) => { taken[t.winner & 1] += t.points + t.bonus; });
      row("in tricks", taken);
    }
    if (st.finished && deal.score) {
      const s = deal.score;
      row("card points", s.card_points);
      row("declarations", s.declarations);
      row("belote", s.belote);
      row("written", s.written);
      if (deal.totals) row("totals", deal.totals);
    } else {
      row("totals before", prev || [0, 0]);
    }
    const table = el("table");
    table.append(...rows);
    const notes = [];
    if (st.finished && deal.score) {
      const s = deal.score;
      notes.push(el("div", "strong", (s.contract_made === null ? "thrown in" :
        s.contract_made ? "contract made" : "contract failed") + (s.capot !== null ? " · capot by " + SIDES[s.capot] : "") +
        (s.multiplier > 1 ? " · ×" + s.multiplier : "") + (s.hanging ? " · hanging " + s.hanging : "")));
      (s.notes || []).forEach((n) => notes.push(el("div", "muted", noteText(n))));
    }
    const res = lg.result;
    if (st.finished && dealNo === lg.deals.length - 1 && res) {
      const r = el("div", "strong", legResultText(res));
      r.id = "leg-result";
      notes.push(r);
    }
    replace($("score"), table, ...notes);
  }

  function renderDealt(st) {
    const deal = current();
    const box = $("dealt-section");
    box.hidden = !st.finished;
    if (!st.finished) return;
    const rows = [0, 1, 2, 3].filter(seen).map((s) => {
      const r = el("div", "dealt-hand");
      r.dataset.seat = String(s);
      r.append(el("span", "dealt-who", SEATS[s] + " "), ...sorted(deal.hands[s], deal).map((c) => card(c, trumpOf(deal))));
      return r;
    });
    replace($("dealt"), ...rows);
  }

  function renderAction(last) {
    const deal = current(), act = $("action");
    if (!last) {
      replace(act, el("span", "", "Deal " + (dealNo + 1) + ": dealt by " + who(deal.dealer) +
        (deal.turned_card ? ", turned up " + pretty(deal.turned_card) : "") + ". Press Next ▶."));
      return;
    }
    const said = AUCTION.test(last.action) && TAKING[rulesetName()] ? callText(last.action) : pretty(last.action);
    const parts = [el("strong", "", who(last.seat) + ": "), el("span", "", said)];
    if (last.ms !== undefined) parts.push(el("span", "latency", " · " + last.ms + " ms" +
      (last.cpu_ms !== undefined ? " (cpu " + last.cpu_ms + " ms)" : "")));
    if (last.outcome) {
      let text = " · the referee played this: " + (WHY[last.outcome] || last.outcome);
      if (last.answer !== undefined) text += "; the bot answered “" + last.answer + "”";
      if (last.error) text += "; " + last.error;
      parts.push(el("span", "outcome", text));
    }
    if (last.comment) parts.push(el("span", "comment", " “" + last.comment + "”"));
    replace(act, ...parts);
  }

  function renderDuplicate() {
    const box = $("duplicate");
    if (!box || !data.duplicate.length) return;
    const table = el("table", "dup");
    // Team 0 holds side 0 at the first table (seats 0 and 2 of leg 1), team 1 side 1.
    const team = (t) => [...new Set([legs[0].players[t], legs[0].players[t + 2]])].join(" & ");
    const head = el("tr");
    ["Board", "Table 1", team(0), team(1), "Table 2", team(0), team(1), "Margin"].forEach((t) =>
      head.append(el("th", "", t)));
    table.append(head);
    const contract = (c, li) => {
      if (!c) return "thrown in";
      const p = legs[li] ? legs[li].players[c.bidder] : SEATS[c.bidder];
      return (c.value ? c.value + " " : "") + STRAIN[c.strain] + " " + p;
    };
    data.duplicate.forEach((b) => {
      const tr = el("tr", "board-row" + (b.board === dealNo && legs.length === 2 ? " now" : ""));
      tr.dataset.board = String(b.board);
      tr.append(el("td", "", String(b.board + 1)));
      // A click on a table's cells opens the board at that table.
      [0, 1].forEach((t) => {
        const cells = [el("td", "", contract(b.contracts[t], t)),
          el("td", "num", String(b.points[t][0])), el("td", "num", String(b.points[t][1]))];
        cells.forEach((c) => { c.dataset.leg = String(Math.min(t, legs.length - 1)); });
        tr.append(...cells);
      });
      tr.append(el("td", "num margin", (b.margin > 0 ? "+" : "") + b.margin));
      tr.addEventListener("click", (e) => {
        const td = e.target.closest("td");
        leg = td && td.dataset.leg ? Number(td.dataset.leg) : 0;
        dealNo = b.board;
        step = 0;
        render();
      });
      table.append(tr);
    });
    replace(box, table);
  }

  function render() {
    const deal = current(), n = deal.actions.length;
    step = Math.max(0, Math.min(step, n));
    const st = stateAt(step);
    const last = step > 0 ? deal.actions[step - 1] : null;
    const trump = st.auctionOver ? trumpOf(deal) : null;
    for (let s = 0; s < 4; s++) {
      const hand = st.auctionOver ? sorted(st.hands[s], deal) : sorted(st.hands[s], { contract: null });
      const shown = seen(s) ? hand.map((c) => card(c, trump)) : hand.map(() => el("span", "card back"));
      replace($("hand-" + s), ...shown);
      $("hand-" + s).dataset.count = String(hand.length);
      $("name-" + s).textContent = SEATS[s] + " · " + players()[s];
      $("badge-" + s).textContent = deal.dealer === s ? "D" : "";
      $("seat-" + s).classList.toggle("acting", !!last && last.seat === s);
    }
    $("step").textContent = "Step " + step + " / " + n;
    renderAction(last);
    renderAuction(st);
    renderDeclarations(st);
    renderTricks(st);
    renderScore(st);
    renderDealt(st);
    renderDuplicate();
    const ends = trickEnds(deal);
    $("prev").disabled = $("first").disabled = step === 0;
    $("next").disabled = $("last").disabled = step === n;
    $("prev-trick").disabled = step === 0;
    $("next-trick").disabled = !ends.some((e) => e > step);
    $("prev-deal").disabled = leg === 0 && dealNo === 0;
    $("next-deal").disabled = leg === legs.length - 1 && dealNo === legs[leg].deals.length - 1;
    $("next-intervention").disabled = nextIntervention() === null;
    $("autoplay").textContent = timer ? "Pause" : "Autoplay";
    $("deal-select").value = leg + "." + dealNo;
    history.replaceState(null, "", "#" + leg + "." + dealNo + "." + step);
  }

  function go(to) { step = to; render(); }
  function goDeal(delta) {
    const all = [];
    legs.forEach((lg, li) => lg.deals.forEach((_, di) => all.push([li, di])));
    const at = all.findIndex(([li, di]) => li === leg && di === dealNo) + delta;
    if (at < 0 || at >= all.length) return false;
    [leg, dealNo] = all[at];
    step = 0;
    render();
    return true;
  }
  function nextTrick() {
    const e = trickEnds(current()).find((x) => x > step);
    go(e === undefined ? current().actions.length : e);
  }
  function prevTrick() {
    const e = trickEnds(current()).filter((x) => x < step);
    go(e.length ? e[e.length - 1] : 0);
  }
  // The next action (after the current step, in this deal or a later one) that the referee played for a bot.
  function nextIntervention() {
    for (let li = leg; li < legs.length; li++) {
      for (let di = li === leg ? dealNo : 0; di < legs[li].deals.length; di++) {
        const acts = legs[li].deals[di].actions;
        for (let i = li === leg && di === dealNo ? step : 0; i < acts.length; i++) {
          if (acts[i].outcome) return [li, di, i + 1];
        }
      }
    }
    return null;
  }
  function stopAutoplay() { if (timer) { clearInterval(timer); timer = null; } }
  function toggleAutoplay() {
    if (timer) { stopAutoplay(); render(); return; }
    timer = setInterval(() => {
      if (step < current().actions.length) go(step + 1);
      else if (!goDeal(1)) { stopAutoplay(); render(); }
    }, 700);
    render();
  }

  $("next").addEventListener("click", () => go(step + 1));
  $("prev").addEventListener("click", () => go(step - 1));
  $("first").addEventListener("click", () => go(0));
  $("last").addEventListener("click", () => go(current().actions.length));
  $("next-trick").addEventListener("click", nextTrick);
  $("prev-trick").addEventListener("click", prevTrick);
  $("next-deal").addEventListener("click", () => goDeal(1));
  $("prev-deal").addEventListener("click", () => goDeal(-1));
  $("next-intervention").addEventListener("click", () => {
    const at = nextIntervention();
    if (at) { [leg, dealNo, step] = at; render(); }
  });
  $("autoplay").addEventListener("click", toggleAutoplay);
  document.addEventListener("keydown", (e) => {
    if (e.target instanceof HTMLSelectElement || e.target instanceof HTMLButtonElement && e.key === " ") return;
    const keys = {
      ArrowRight: () => go(step + 1), ArrowLeft: () => go(step - 1), Home: () => go(0),
      End: () => go(current().actions.length), ArrowDown: nextTrick, ArrowUp: prevTrick,
      PageDown: () => goDeal(1), PageUp: () => goDeal(-1), " ": toggleAutoplay,
    };
    if (e.key in keys) { e.preventDefault(); keys[e.key](); }
  });

  fillSelect();
  // A link may carry "#leg.deal.step" (what the address bar shows while stepping).
  const m = /^#(\d+)\.(\d+)\.(\d+)$/.exec(location.hash);
  if (m && legs[+m[1]] && legs[+m[1]].deals[+m[2]]) { leg = +m[1]; dealNo = +m[2]; step = +m[3]; }
  render();
})();
