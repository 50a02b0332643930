// A match followed live (docs/web.md "Watching a match live"): polls /api/live/MATCH_ID?since=N for its public
// events (arena/play/live.py: the seating, each call and card played, each deal's score; never a hand) and
// shows them with the replay viewer's cards and words (replay_deal.js). Once the result is recorded the page
// reloads: the server then sends the replay, with every hand. Strings go in with textContent, never innerHTML.
"use strict";
(function () {
  const cfg = JSON.parse(document.getElementById("live-data").textContent);
  const { SEATS, el, pretty, card, markWinner, AUCTION } = window.ReplayDeal;
  const $ = (id) => document.getElementById(id);
  const api = "/api/live/" + encodeURIComponent(cfg.match_id) + "?since=";
  let since = 0, start = null, ended = false, failures = 0;
  let drawn = false;  // rendered since the last (re)start: later polls redraw only when something changed
  let attempt = "";  // the attempt read (its mark, from the first reply): another one means a restart
  let legs = [];  // per leg: per deal {actions: [...], end: {...} | null}

  function reset() { since = 0; start = null; ended = false; legs = []; attempt = ""; drawn = false; }
  function dealOf(leg, deal) {
    while (legs.length <= leg) legs.push([]);
    const deals = legs[leg];
    while (deals.length <= deal) deals.push({ actions: [], end: null });
    return deals[deal];
  }
  function take(e) {
    if (e.kind === "start") { start = e; $("live-duplicate").hidden = !e.duplicate; }
    else if (e.kind === "action") dealOf(e.leg, e.deal).actions.push(e);
    else if (e.kind === "deal") dealOf(e.leg, e.deal).end = e;
    else if (e.kind === "end") ended = true;
  }
  function who(leg, seat) {
    const names = start && start.players[leg];
    return SEATS[seat] + (names ? " (" + names[seat] + ")" : "");
  }
  // The trump of a deal being played: the strain of the auction's last bid, once the cards are played.
  function trumpOf(d) {
    const bids = d.actions.filter((a) => a.action.startsWith("bid "));
    const played = d.actions.some((a) => !AUCTION.test(a.action));
    if (!bids.length || !played) return null;
    const s = bids[bids.length - 1].action.split(" ").pop();
    return "CDHS".includes(s) && s.length === 1 ? s : null;
  }
  function renderDeal(leg, no, d) {
    const box = el("section", "live-deal");
    box.dataset.leg = leg + 1; box.dataset.deal = no + 1;
    box.append(el("h3", "", (legs.length > 1 ? "Table " + (leg + 1) + " · " : "") + "Deal " + (no + 1) +
      (d.end ? (d.end.thrown_in ? " (thrown in)" : "") : " (being played)")));
    const calls = d.actions.filter((a) => AUCTION.test(a.action));
    const auction = el("p", "live-auction");
    auction.append(el("strong", "", "Auction: "));
    auction.append(calls.map((a) => SEATS[a.seat] + " " + pretty(a.action).replace(/^bid /, "")).join(" · ") || "—");
    box.append(auction);
    const decl = d.actions.filter((a) => a.action.startsWith("declare") && a.action !== "declare none");
    if (decl.length) {
      const shown = d.end ? d.end.declarations.map((x) => SEATS[x.seat] + " " + pretty(x.code)) :
        decl.map((a) => SEATS[a.seat] + " declares (its cards are shown at the deal's end)");
      box.append(el("p", "live-declarations", "Declarations: " + (shown.join(" · ") || "—")));
    }
    const plays = d.actions.filter((a) => a.action.startsWith("play "));
    const trump = trumpOf(d);
    const tricks = el("ol", "live-tricks");
    for (let i = 0; i < plays.length; i += 4) {
      const li = el("li", "live-trick");
      const trick = plays.slice(i, i + 4), next = plays[i + 4];
      trick.forEach((p) => {
        const c = card(p.action.split(" ")[1], trump);
        // The winner of a trick leads the next one (the last trick's is in the deal's score).
        if (next && next.seat === p.seat && trick.length === 4) markWinner(c);
        const slot = el("span", "live-play");
        slot.append(el("span", "live-seat", SEATS[p.seat][0]), c);
        if (p.action.endsWith(" belote")) slot.append(el("span", "live-belote", "belote"));
        li.append(slot);
      });
      tricks.append(li);
    }
    box.append(tricks);
    if (d.end) {
      box.append(el("p", "live-score", "Written " + d.end.written.join(" – ") + " · totals " + d.end.totals.join(" – ")));
    }
    return box;
  }
  function render() {
    const root = $("live"), out = [];
    legs.forEach((deals, leg) => {
      const head = el("h2", "", (legs.length > 1 ? "Table " + (leg + 1) + ": " : "") +
        [0, 1, 2, 3].map((s) => who(leg, s)).join(", "));
      out.push(head);
      deals.forEach((d, no) => out.push(renderDeal(leg, no, d)));
    });
    root.replaceChildren(...out);
    $("live-status").textContent = ended ? "The play is over; the replay appears once the result is recorded…" :
      "Live: " + since + " events so far.";
  }
  function poll() {
    fetch(api + since + (attempt ? "&attempt=" + attempt : ""), { headers: { Accept: "application/json" } }).then((resp) => {
      if (resp.status === 404) {
        $("live-status").textContent = "This match is no longer being played (it may be played again).";
        return null;
      }
      if (!resp.ok) throw new Error("HTTP " + resp.status);
      return resp.json();
    }).then((page) => {
      if (page === null) return;
      const recovered = failures > 0;  // the status line says the arena did not answer: say it again
      failures = 0;
      if (page.recorded) { window.location.reload(); return; }
      if (page.restarted) { reset(); setTimeout(poll, 0); return; }
      page.events.forEach(take);
      const changed = page.events.length > 0 || !drawn || recovered || page.attempt !== attempt;
      since = page.next;
      attempt = page.attempt;
      // Redrawn only when there is something new: a redraw on every poll would take away a reader's text
      // selection, and the page's elements, every few seconds.
      if (changed) { render(); drawn = true; }
      setTimeout(poll, page.more ? 0 : cfg.poll_ms);
    }).catch(() => {
      failures += 1;
      $("live-status").textContent = "The arena does not answer; trying again…";
      setTimeout(poll, Math.min(30000, cfg.poll_ms * 2 ** Math.min(failures, 5)));
    });
  }
  poll();
})();
