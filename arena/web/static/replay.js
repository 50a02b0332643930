// Replay viewer: steps through the deals of a game record (docs/game-record.md, docs/web.md); the reading of
// one deal is replay_deal.js, the duplicate table and the arithmetic of a score replay_score.js.
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
  const SIDES = ["N/S", "E/W"];
  // Rulesets where a bid names only a suit taken as trump (the turned card's, or another).
  const TAKING = { french: true, bela: true };
  const WHY = {
    timeout: "no answer in time",
    illegal_action: "the answer was not a legal action",
    malformed_reply: "the answer could not be read",
  };
  const { SEATS, SUIT, STRAIN, RANK, AUCTION, el, pretty, trumpOf, card, markWinner, sorted, auctionLength, stateAt,
    trickEnds, noteText } = window.ReplayDeal;
  const $ = (id) => document.getElementById(id);
  const legs = data.legs;
  let leg = 0, dealNo = 0, step = 0, view = "all", timer = null;

  function replace(node, ...children) { node.replaceChildren(...children); }
  function current() { return legs[leg].deals[dealNo]; }
  function players() { return legs[leg].players; }
  function rulesetName() { return (legs[leg].ruleset || {}).name || ""; }
  function who(seat) { return SEATS[seat] + " (" + players()[seat] + ")"; }
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
  // The cards every seat sees once the first trick has settled the declarations: those of the credited ones.
  function shownCards(st) {
    const facts = current().facts, out = new Set();
    if (!facts || st.tricks.length < 1) return out;
    facts.declarations.filter((x) => x.credited).forEach((x) => x.code.split("-").forEach((c) => out.add(c)));
    return out;
  }

  function fillSelect() {
    const sel = $("deal-select");
    legs.forEach((lg, li) => lg.deals.forEach((d, di) => {
      const o = el("option", "", (legs.length > 1 ? "Leg " + (li + 1) + " · " : "") + "Deal " + (di + 1) +
        (d.thrown_in ? " (thrown in)" : ""));
      o.value = li + 1 + "." + (di + 1);
      sel.append(o);
    }));
    sel.addEventListener("change", () => {
      [leg, dealNo] = sel.value.split(".").map((x) => Number(x) - 1);
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
    if (!st.auctionOver) text = st.finished ? "The auction was stopped (the match ended)" : "Auction in progress";
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
        // Another seat's declaration is known by its kind and points until the first trick shows the
        // credited ones to every seat (referee.observation.announcement_views).
        const open = seen(d.seat) || (settled && x.credited);
        const line = el("div", settled ? (x.credited ? "strong credited" : "muted not-credited") : "",
          SEATS[d.seat] + ": " + (open ? pretty(x.text) : x.public || "a declaration"));
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
      if (st.trick.length === 4 && winners[st.tricks.length - 1] === p.seat) markWinner(c);
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
    replace($("table-info"), ...info);
    // The trump is named above the table, beside the contract, never among the cards on it: Pilotta turns
    // no card, and a label over North's card read like one.
    const c = deal.contract, mark = $("trump-info");
    mark.hidden = !(st.auctionOver && c);
    mark.textContent = mark.hidden ? "" : "Trump: " + STRAIN[c.strain] + " · " + contractText(c);
  }

  // How a leg ended. A forfeit is never a draw at either table: the forfeiting leg names who forfeited,
  // why and who wins by it (the points stood where play stopped, they decide nothing); the other table's
  // leg, stopped because the match ended, says where and why it ended. Team t holds side t at the first
  // table and side 1 - t at the second (every bot one seat on).
  function legResultText(res) {
    const f = res.forfeit;
    const names = (s) => [...new Set([players()[s], players()[s + 2]])].join(" & ");
    const stood = " (the points stood at " + res.scores.join(" – ") + " when play stopped)";
    const void_ = data.winner === null || data.winner === undefined;
    const winnerHere = () => { const s = data.winner ^ (leg === 1 ? 1 : 0); return names(s) + " (" + SIDES[s] + ")"; };
    if (f) {
      const side = f.side === undefined ? f.seat & 1 : f.side, won = 1 - side;
      const head = who(f.seat) + " forfeited: " + f.reason + ". ";
      // A match without a winner despite a forfeit is void: bots of both teams could not play.
      if (void_) return head + "No side wins: the match is void" + stood + ".";
      return head + names(won) + " (" + SIDES[won] + ") win by forfeit" + stood + ".";
    }
    if (res.stopped || (data.forfeit && (res.winner === null || res.winner === undefined))) {
      const other = legs.findIndex((l, i) => i !== leg && l.result && l.result.forfeit);
      let where = "Stopped: the match ended at the other table";
      if (other >= 0) {
        const of = legs[other].result.forfeit, p = legs[other].players[of.seat];
        where += " (table " + (other + 1) + "), where " + SEATS[of.seat] + " (" + p + ") forfeited: " + of.reason;
      } else if (data.forfeit) where += " by a forfeit: " + data.forfeit;
      if (void_) return where + ". No side wins: the match is void" + stood + ".";
      return where + ". " + winnerHere() + " win the match by forfeit" + stood + ".";
    }
    if (res.winner === null || res.winner === undefined) return "Game over: draw " + res.scores.join(" – ") +
      (res.reason ? " (" + res.reason + ")" : "");
    return "Game over: " + names(res.winner) + " (" + SIDES[res.winner] + ") win " + res.scores.join(" – ") +
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
      if (deal.contract) {
        const d = ReplayScore.details("How the points add up",
          ReplayScore.arithmeticLines(deal, (x) => SIDES[x]));
        d.id = "arithmetic";
        notes.push(d);
      }
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

  // A decision's CPU time, in the record's unit (ms). A bot the referee started as a process is read from
  // /proc in clock ticks (10 ms): when every reading of the leg is a whole number of ticks, one decision's
  // 0 means "less than a tick", so it says so and adds the seat's sum over the deal so far, the fair figure.
  // A sandboxed bot is read from its cgroup to the microsecond: shown as it is.
  function cpuText(a) {
    if (typeof a.cpu_ms !== "number") return "";
    const all = legs[leg].deals.flatMap((d) => d.actions).filter((x) => typeof x.cpu_ms === "number");
    if (!all.every((x) => x.cpu_ms % 10 === 0)) {
      return " (cpu " + (a.cpu_ms < 10 ? a.cpu_ms.toFixed(2) : a.cpu_ms.toFixed(0)) + " ms)";
    }
    const upto = current().actions.slice(0, step).filter((x) => x.seat === a.seat && typeof x.cpu_ms === "number");
    const total = upto.reduce((t, x) => t + x.cpu_ms, 0);
    return " (cpu " + (a.cpu_ms === 0 ? "< 10" : String(a.cpu_ms)) + " ms, in 10 ms ticks; " + total +
      " ms over " + SEATS[a.seat] + "'s " + upto.length + (upto.length === 1 ? " decision" : " decisions") +
      " of this deal)";
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
    if (last.ms !== undefined) parts.push(el("span", "latency", " · " + last.ms + " ms" + cpuText(last)));
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
    replace(box, ReplayScore.duplicateTable(data, legs, { board: dealNo }, (l, b) => {
      leg = l;
      dealNo = b;
      step = 0;
      render();
    }));
  }

  function render() {
    const deal = current(), n = deal.actions.length;
    step = Math.max(0, Math.min(step, n));
    const st = stateAt(current(), step);
    const last = step > 0 ? deal.actions[step - 1] : null;
    const trump = st.auctionOver ? trumpOf(deal) : null;
    for (let s = 0; s < 4; s++) {
      const hand = st.auctionOver ? sorted(st.hands[s], deal) : sorted(st.hands[s], { contract: null });
      // Another seat's hand: the cards of its shown declarations face up, first (where they sit among the
      // hidden cards would tell more than the rules show), the rest face down.
      const open = seen(s) ? null : shownCards(st);
      const shown = seen(s) ? hand.map((c) => card(c, trump)) : [
        ...hand.filter((c) => open.has(c)).map((c) => {
          const x = card(c, trump);
          x.classList.add("declared");
          x.title += ": shown, a credited declaration";
          x.setAttribute("aria-label", x.title);
          return x;
        }),
        ...hand.filter((c) => !open.has(c)).map(() => el("span", "card back"))];
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
    $("deal-select").value = leg + 1 + "." + (dealNo + 1);
    // Legs and deals counted from 1, as everywhere else (arena match, the owners' logs); the step is the
    // number of actions taken (0: the deal just dealt).
    history.replaceState(null, "", "#" + (leg + 1) + "." + (dealNo + 1) + "." + step);
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
  // A link may carry "#leg.deal.step" (what the address bar shows while stepping; leg and deal from 1). A
  // link to a deal this match does not have says so, above the table, instead of opening another silently.
  const m = /^#(\d+)\.(\d+)\.(\d+)$/.exec(location.hash);
  if (m) {
    const [l, d, k] = [+m[1], +m[2], +m[3]];
    const lg = legs[l - 1];
    if (lg && lg.deals[d - 1]) {
      [leg, dealNo, step] = [l - 1, d - 1, k];
    } else {
      const note = $("link-note");
      note.textContent = (lg ? "Leg " + l + " has no deal " + d + " (it has " + lg.deals.length + ")"
        : "This match has no leg " + l + " (it has " + legs.length + ")") + ": the link " + location.hash +
        " points to nothing here. Showing leg 1, deal 1.";
      note.hidden = false;
    }
  } else if (location.hash) {
    const note = $("link-note");
    note.textContent = "The link " + location.hash + " is not a moment of this match (#leg.deal.step, from 1): " +
      "showing leg 1, deal 1.";
    note.hidden = false;
  }
  render();
})();
