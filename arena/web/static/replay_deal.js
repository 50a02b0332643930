// The replay viewer's reading of one deal (loaded before replay.js, docs/web.md): the card codes in words,
// a hand as a card player holds it, the cards drawn, and the state after the first k actions of a deal,
// recomputed from the hands as dealt each time (a deal has at most a few dozen actions), so going back is as
// exact as going on. Every string from the record is put in the page with textContent, never innerHTML.
"use strict";
window.ReplayDeal = (function () {
  const SEATS = ["South", "East", "North", "West"];
  const SUIT = { C: "♣", D: "♦", H: "♥", S: "♠" };
  const STRAIN = { C: "♣", D: "♦", H: "♥", S: "♠", NT: "no trump", AT: "all trump" };
  const RANK = { T: "10" };
  const TRUMP_ORDER = "J9ATKQ87", PLAIN_ORDER = "ATKQJ987", SUIT_ORDER = "SHCD";
  const AUCTION = /^(pass|bid|contra|surcontra)\b/;

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function pretty(code) {
    return code.replace(/\b([789TJQKA])([CDHS])\b/g, (_, r, s) => (RANK[r] || r) + SUIT[s])
      .replace(/^bid (\d+ )?(C|D|H|S|NT|AT)$/, (_, v, s) => "bid " + (v || "") + STRAIN[s]);
  }
  function trumpOf(deal) {
    const c = deal.contract;
    return c && SUIT[c.strain] ? c.strain : null;
  }
  // A card; a trump card carries a small badge of the trump suit in its corner (and says so to a screen
  // reader), so it cannot be taken for the trick's winner, which has its own mark (markWinner).
  function card(code, trump) {
    const isTrump = code[1] === trump;
    const c = el("span", "card" + ("HD".includes(code[1]) ? " red" : "") + (isTrump ? " trump" : ""));
    c.dataset.card = code;
    c.title = (RANK[code[0]] || code[0]) + SUIT[code[1]] + (isTrump ? " (trump)" : "");
    c.append(el("span", "r", RANK[code[0]] || code[0]), el("span", "s", SUIT[code[1]] || code[1]));
    if (isTrump) {
      const b = el("span", "trump-badge", SUIT[trump]);
      b.setAttribute("aria-hidden", "true");
      c.append(b);
    }
    c.setAttribute("aria-label", c.title);
    return c;
  }
  function markWinner(c) {
    c.classList.add("win");
    c.title += " (wins the trick)";
    c.setAttribute("aria-label", c.title);
    c.append(el("span", "win-label", "wins"));
  }
  // A hand as a card player holds it: trump first, then the other suits; strongest card first in each
  // (the trump order in the trump suit, and in every suit at all trump).
  function sorted(cards, deal) {
    const c = deal.contract, trump = trumpOf(deal), all = c && c.strain === "AT";
    const suitKey = (s) => (s === trump ? -1 : SUIT_ORDER.indexOf(s));
    const rankKey = (x) => (all || x[1] === trump ? TRUMP_ORDER : PLAIN_ORDER).indexOf(x[0]);
    return cards.slice().sort((a, b) => suitKey(a[1]) - suitKey(b[1]) || rankKey(a) - rankKey(b));
  }
  // The number of actions that make the auction: the calls before the first declaration or card; the whole
  // deal when it ended in the auction (thrown in); null while it is still open (a forfeit stopped it).
  function auctionLength(deal) {
    const i = deal.actions.findIndex((a) => !AUCTION.test(a.action));
    if (i >= 0) return i;
    return deal.contract || deal.thrown_in ? deal.actions.length : null;
  }

  // The state after the first k actions of the current deal.
  function stateAt(deal, k) {
    const facts = deal.facts;
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

  // A score note: words in records of format_version 1 and 2; from version 3 an object, its code and values
  // with the words ("text") rendered by the referee (docs/game-record.md). Without words, the code and values.
  function noteText(n) {
    if (typeof n === "string") return n;
    if (n && typeof n.text === "string") return n.text;
    if (!n || typeof n !== "object") return String(n);
    const values = Object.keys(n).filter((k) => k !== "code" && k !== "text").map((k) => k + " " + n[k]);
    return n.code + (values.length ? ": " + values.join(", ") : "");
  }

  return { SEATS, SUIT, STRAIN, RANK, AUCTION, el, pretty, trumpOf, card, markWinner, sorted, auctionLength, stateAt,
    trickEnds, noteText };
})();
