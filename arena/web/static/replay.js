// Replay viewer: steps through one deal of a game record (docs/game-record.md).
//
// The page embeds the record (already trimmed by arena/web_replay.py) as JSON.  Step k shows the deal
// after its first k actions: the state is recomputed from the hands as dealt each time (a deal has at
// most a few dozen actions), so Prev is as exact as Next.  Every string from the record is put in the
// page with textContent, never innerHTML: bots choose their comments and their names.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("replay-data").textContent);
  const SEATS = ["South", "East", "North", "West"];
  const SUIT = { C: "♣", D: "♦", H: "♥", S: "♠" };
  const STRAIN = { C: "♣", D: "♦", H: "♥", S: "♠", NT: "no trump", AT: "all trump" };
  const RANK = { T: "10" };
  const AUCTION = /^(pass|bid|contra|surcontra)\b/;
  const $ = (id) => document.getElementById(id);
  let leg = 0, dealNo = 0, step = 0;

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function card(code) {
    const c = el("span", "card" + ("HD".includes(code[1]) ? " red" : ""));
    c.dataset.card = code;
    c.title = code;
    c.append(el("span", "r", RANK[code[0]] || code[0]), el("span", "s", SUIT[code[1]] || code[1]));
    return c;
  }
  // "bid 90 H" -> "bid 90 ♥"; card codes inside declarations and plays -> rank + suit symbol.
  function pretty(code) {
    return code.replace(/\b([789TJQKA])([CDHS])\b/g, (_, r, s) => (RANK[r] || r) + SUIT[s])
      .replace(/^bid (\d+ )?(C|D|H|S|NT|AT)$/, (_, v, s) => "bid " + (v || "") + STRAIN[s]);
  }
  function contractText(c, players) {
    if (!c) return "";
    const mult = { 2: " · contra", 4: " · surcontra" }[c.multiplier] || "";
    return (c.value ? c.value + " " : "") + STRAIN[c.strain] + " by " + SEATS[c.bidder] +
      " (" + players[c.bidder] + ")" + mult;
  }
  function replace(node, ...children) { node.replaceChildren(...children); }

  const legs = data.legs;
  function current() { return legs[leg].deals[dealNo]; }

  // The state after the first k actions of the current deal.
  function stateAt(k) {
    const deal = current();
    const hands = deal.hands.map((h) => h.slice());
    const auction = [], tricks = [], declared = [];
    let trick = [], auctionOver = false;
    deal.actions.slice(0, k).forEach((a, i) => {
      const code = a.action;
      if (AUCTION.test(code) && !auctionOver) { auction.push({ seat: a.seat, code, i }); return; }
      auctionOver = true;
      if (code.startsWith("declare ")) { declared.push({ seat: a.seat, code }); return; }
      if (code.startsWith("play ")) {
        const c = code.split(" ")[1];
        const h = hands[a.seat], at = h.indexOf(c);
        if (at >= 0) h.splice(at, 1);
        if (trick.length === 4) trick = [];
        trick.push({ seat: a.seat, card: c });
        if (trick.length === 4) tricks.push(trick);
      }
    });
    const finished = k === deal.actions.length;
    return { hands, auction, tricks, trick, declared, auctionOver: auctionOver || finished, finished };
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
  }

  function renderAuction(st, players) {
    const grid = el("div", "calls");
    const deal = current();
    // Columns start with the seat after the dealer, who speaks first.
    const order = [1, 2, 3, 4].map((x) => (deal.dealer + x) % 4);
    order.forEach((s) => grid.append(el("span", "hd", SEATS[s])));
    if (st.auction.length) for (let i = 0; i < order.indexOf(st.auction[0].seat); i++) grid.append(el("span"));
    st.auction.forEach((b) => grid.append(el("span", b.i === step - 1 ? "now" : "", pretty(b.code).replace(/^bid /, ""))));
    replace($("auction"), grid);
    const c = deal.contract;
    $("contract").textContent = !st.auctionOver ? "Auction in progress" :
      (c ? "Contract: " + contractText(c, players) : "All passed: thrown in");
  }

  function renderDeclarations(st) {
    const box = $("declarations");
    const deal = current();
    const lines = st.declared.map((d) => el("div", "", SEATS[d.seat] + ": " + pretty(d.code.slice(8))));
    if (st.finished && deal.declarations) {
      deal.declarations.filter((d) => d.credited.length).forEach((d) =>
        lines.push(el("div", "strong", "credited to " + SEATS[d.seat] + ": " + pretty(d.credited.join(" ")))));
      (deal.belotes || []).forEach((b) => lines.push(el("div", "",
        "belote " + SEATS[b.seat] + " " + SUIT[b.suit] + (b.completed ? " (counts)" : b.lost ? " (lost)" : ""))));
    }
    replace(box, ...(lines.length ? lines : [el("span", "muted", "none yet")]));
  }

  function renderTricks(st) {
    const winners = legs[leg].trick_winners[dealNo] || [];
    const table = el("table");
    st.tricks.forEach((t, i) => {
      const tr = el("tr");
      tr.append(el("td", "", String(i + 1)));
      t.forEach((p) => {
        const td = el("td", "HD".includes(p.card[1]) ? "suit-red" : "", pretty(p.card));
        td.prepend(el("small", "muted", SEATS[p.seat][0] + " "));
        tr.append(td);
      });
      const w = winners[i];
      tr.append(el("td", "strong", w === null || w === undefined ? "" : "→ " + SEATS[w]));
      table.append(tr);
    });
    replace($("tricks"), ...(st.tricks.length ? [table] : [el("span", "muted", "no trick yet")]));
    // The table centre: the trick being played, or the one just completed with its winner marked.
    const centre = $("trick");
    const shown = st.trick.map((p) => {
      const slot = el("div", "slot slot-" + p.seat);
      const c = card(p.card);
      if (st.trick.length === 4 && winners[st.tricks.length - 1] === p.seat) c.classList.add("win");
      slot.append(c);
      return slot;
    });
    replace(centre, ...shown);
  }

  function renderScore(st) {
    const deal = current(), box = $("score");
    const prev = dealNo > 0 ? legs[leg].deals[dealNo - 1].totals : null;
    const rows = [];
    const row = (label, v) => {
      const tr = el("tr");
      tr.append(el("th", "", label), el("td", "num", String(v[0])), el("td", "num", String(v[1])));
      rows.push(tr);
    };
    const head = el("tr");
    head.append(el("th"), el("th", "", "S/N"), el("th", "", "E/W"));
    rows.push(head);
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
        s.contract_made ? "contract made" : "contract failed") + (s.capot !== null ? " · capot by side " + s.capot : "") +
        (s.multiplier > 1 ? " · ×" + s.multiplier : "") + (s.hanging ? " · hanging " + s.hanging : "")));
      (s.notes || []).forEach((n) => notes.push(el("div", "muted", n)));
    }
    const res = legs[leg].result;
    if (st.finished && dealNo === legs[leg].deals.length - 1 && res) {
      notes.push(el("div", "strong", "Game over: " + (res.winner === null || res.winner === undefined ? "draw" :
        "side " + res.winner + " wins") + " " + res.scores.join(" – ") + (res.reason ? " (" + res.reason + ")" : "")));
    }
    replace(box, table, ...notes);
  }

  function render() {
    const deal = current(), lg = legs[leg], players = lg.players;
    const n = deal.actions.length;
    step = Math.max(0, Math.min(step, n));
    const st = stateAt(step);
    const last = step > 0 ? deal.actions[step - 1] : null;
    for (let s = 0; s < 4; s++) {
      replace($("hand-" + s), ...st.hands[s].map(card));
      $("hand-" + s).dataset.count = String(st.hands[s].length);
      $("name-" + s).textContent = SEATS[s] + " · " + players[s];
      $("badge-" + s).textContent = deal.dealer === s ? "D" : "";
      $("seat-" + s).classList.toggle("acting", !!last && last.seat === s);
    }
    $("step").textContent = "Step " + step + " / " + n;
    const act = $("action");
    if (!last) {
      replace(act, el("span", "", "Deal " + (dealNo + 1) + ": dealt by " + SEATS[deal.dealer] + " (" +
        players[deal.dealer] + ")" + (deal.turned_card ? ", turned up " + pretty(deal.turned_card) : "") +
        ". Press Next."));
    } else {
      const parts = [el("strong", "", SEATS[last.seat] + " (" + players[last.seat] + "): "), el("span", "", pretty(last.action))];
      if (last.outcome) parts.push(el("span", "outcome", " [" + last.outcome + ": the referee played this]"));
      if (last.ms !== undefined) parts.push(el("span", "muted", " · " + last.ms + " ms"));
      if (last.comment) parts.push(el("span", "comment", " “" + last.comment + "”"));
      replace(act, ...parts);
    }
    renderAuction(st, players);
    renderDeclarations(st);
    renderTricks(st);
    renderScore(st);
    $("prev").disabled = $("first").disabled = step === 0;
    $("next").disabled = $("last").disabled = step === n;
    $("deal-select").value = leg + "." + dealNo;
    history.replaceState(null, "", "#" + leg + "." + dealNo + "." + step);
  }

  function go(to) { step = to; render(); }
  $("next").addEventListener("click", () => go(step + 1));
  $("prev").addEventListener("click", () => go(step - 1));
  $("first").addEventListener("click", () => go(0));
  $("last").addEventListener("click", () => go(current().actions.length));
  document.addEventListener("keydown", (e) => {
    if (e.target instanceof HTMLSelectElement) return;
    const keys = { ArrowRight: step + 1, ArrowLeft: step - 1, Home: 0, End: current().actions.length };
    if (e.key in keys) { e.preventDefault(); go(keys[e.key]); }
  });

  fillSelect();
  // A link may carry "#leg.deal.step" (what the address bar shows while stepping).
  const m = /^#(\d+)\.(\d+)\.(\d+)$/.exec(location.hash);
  if (m && legs[+m[1]] && legs[+m[1]].deals[+m[2]]) { leg = +m[1]; dealNo = +m[2]; step = +m[3]; }
  render();
})();
