#!/usr/bin/env node
// A simple pilotta-arena bot in Node.js.
//
//   node sample_bots/node/bot.js --port 50063 [--host 0.0.0.0]     (or PORT=50063)
//
// It loads the protocol from the repository's .proto files at run time (no generated code), serves the
// Bot service and the standard gRPC health service in both protocol versions (1: a unary Decide call per
// decision; 2: one Play stream per seat, chosen when the referee offers it), and answers only codes from
// the legal list:
//   auction: bids the cheapest legal bid of its best trump suit when its hand is strong enough, else passes;
//   declarations: announces them all;  belote: always announces it;
//   play: follows with the lowest card that wins the trick, else plays its lowest card.
'use strict';

const path = require('path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const { HealthImplementation } = require('grpc-health-check');

const PROTOCOL_VERSIONS = [1, 2];
const PROTO_ROOT = path.resolve(__dirname, '..', '..', 'proto');
const BOT_PROTO = 'pilotta/arena/v1/bot.proto';

const NAME = 'node-simple';
const VERSION = '1.0.0';
const GAMES = ['pilotta', 'bulgarian', 'coinche', 'french', 'bela'];

// Card codes: rank 7 8 9 T J Q K A then suit C D H S ("JH"). Strength within a suit, higher wins.
const TRUMP_STRENGTH = { J: 7, 9: 6, A: 5, T: 4, K: 3, Q: 2, 8: 1, 7: 0 };
const PLAIN_STRENGTH = { A: 7, T: 6, K: 5, Q: 4, J: 3, 9: 2, 8: 1, 7: 0 };
const TRUMP_POINTS = { J: 20, 9: 14, A: 11, T: 10, K: 4, Q: 3, 8: 0, 7: 0 };
const PLAIN_POINTS = { A: 11, T: 10, K: 4, Q: 3, J: 2, 9: 0, 8: 0, 7: 0 };
const SUITS = ['C', 'D', 'H', 'S'];

function parseArgs(argv) {
  const args = { port: process.env.PORT, host: process.env.PILOTTA_BOT_HOST || '127.0.0.1' };
  for (let i = 0; i < argv.length; i += 1) {
    const a = argv[i];
    if (a === '--port') args.port = argv[++i];
    else if (a.startsWith('--port=')) args.port = a.slice(7);
    else if (a === '--host') args.host = argv[++i];
    else if (a.startsWith('--host=')) args.host = a.slice(7);
    else if (a === '--help' || a === '-h') {
      console.log('usage: node bot.js --port N [--host H]   (or PORT=N)');
      process.exit(0);
    } else {
      console.error(`unknown argument ${JSON.stringify(a)} (expected --port N, --host H)`);
      process.exit(2);
    }
  }
  if (args.port === undefined || !/^\d+$/.test(String(args.port))) {
    console.error('give the port to listen on with --port N or the PORT environment variable');
    process.exit(2);
  }
  args.port = Number(args.port);
  return args;
}

// --- Cards -------------------------------------------------------------------------------------------
function isTrump(card, strain) {
  return strain === 'AT' || card[1] === strain;
}
function strength(card, strain) {
  return isTrump(card, strain) ? TRUMP_STRENGTH[card[0]] : PLAIN_STRENGTH[card[0]];
}
function points(card, strain) {
  return isTrump(card, strain) ? TRUMP_POINTS[card[0]] : PLAIN_POINTS[card[0]];
}
// Whether `card` beats `best`, the card winning the trick so far.
function beats(card, best, strain) {
  if (card[1] === best[1]) return strength(card, strain) > strength(best, strain);
  return SUITS.includes(strain) && card[1] === strain;
}
function bestCard(cards, strain) {
  let best = null;
  for (const c of cards) if (best === null || beats(c, best, strain)) best = c;
  return best;
}
// Lowest first: plain cards before trumps, then fewer points, then weaker.
function cheapness(card, strain) {
  const trump = SUITS.includes(strain) && card[1] === strain ? 1 : 0;
  return [trump, points(card, strain), strength(card, strain)];
}
function byCheapness(strain) {
  return (a, b) => {
    const x = cheapness(a, strain);
    const y = cheapness(b, strain);
    for (let i = 0; i < x.length; i += 1) if (x[i] !== y[i]) return x[i] - y[i];
    return a < b ? -1 : a > b ? 1 : 0;
  };
}

// --- Decisions ---------------------------------------------------------------------------------------
function parseBid(code) {
  const w = code.split(/\s+/);
  if (w[0] !== 'bid') return null;
  if (w.length === 3 && /^\d+$/.test(w[1])) return { code, value: Number(w[1]), strain: w[2] };
  if (w.length === 2) return { code, value: 0, strain: w[1] };
  return null;
}

// Points our side may take with `suit` as trump: trump honours and length, side aces, a partner's share.
function handValue(hand, suit) {
  let value = 30;
  const trumps = hand.filter((c) => c[1] === suit);
  for (const c of trumps) value += { J: 25, 9: 16, A: 11, T: 10 }[c[0]] || 5;
  if (trumps.length > 3) value += 10 * (trumps.length - 3);
  if (trumps.length <= 1) value -= 25;
  for (const c of hand) if (c[1] !== suit && c[0] === 'A') value += 14;
  return value;
}

function decideAuction(obs, legal) {
  const hand = obs.hand.slice();
  if (obs.turned_card && !hand.includes(obs.turned_card)) hand.push(obs.turned_card);
  let choice = null;
  let bestMargin = -1;
  for (const code of legal) {
    const bid = parseBid(code);
    if (!bid || !SUITS.includes(bid.strain)) continue; // no-trump and all-trump bids: left to others
    const value = handValue(hand, bid.strain);
    // A bid without a number (Bulgarian ladder, French and Bela taking) is made on part of the hand:
    // ask for as much per card held as a point bid of 95 asks of eight cards.
    const needed = bid.value || Math.round((95 * hand.length) / 8);
    const margin = value - needed;
    if (margin >= 0 && margin > bestMargin) {
      choice = code;
      bestMargin = margin;
    }
  }
  if (choice) return choice;
  return legal.includes('pass') ? 'pass' : legal[0];
}

function decidePlay(obs, legal) {
  // Card -> code, preferring "play QH belote" to "play QH".
  const plays = new Map();
  for (const code of legal) {
    const w = code.split(/\s+/);
    if (w[0] === 'play' && (!plays.has(w[1]) || w.length === 3)) plays.set(w[1], code);
  }
  if (plays.size === 0) return legal[0];
  const strain = obs.contract ? obs.contract.strain : null;
  const cards = [...plays.keys()].sort(byCheapness(strain));
  const trickCards = obs.trick && obs.trick.cards ? obs.trick.cards : [];
  if (trickCards.length > 0) {
    const best = bestCard(trickCards, strain);
    const winners = cards.filter((c) => beats(c, best, strain));
    if (winners.length > 0) return plays.get(winners[0]);
  }
  return plays.get(cards[0]);
}

function decide(obs, legal) {
  if (legal.some((c) => c.startsWith('declare '))) {
    // Announce everything: the code naming the most declarations.
    const count = (c) => (c === 'declare none' ? 0 : c.split(/\s+/).length - 1);
    return legal.filter((c) => c.startsWith('declare ')).reduce((a, b) => (count(b) > count(a) ? b : a));
  }
  if (legal.some((c) => c.startsWith('bid ') || c === 'pass')) return decideAuction(obs, legal);
  return decidePlay(obs, legal);
}

// --- Service -----------------------------------------------------------------------------------------
function loadProtocol() {
  const definition = protoLoader.loadSync(BOT_PROTO, {
    includeDirs: [PROTO_ROOT],
    keepCase: true, // field names as in the .proto: legal_actions, turned_card
    enums: String, // Seat and Phase as their names: "SOUTH", "PLAY"
    longs: Number,
    defaults: true, // absent repeated fields read as [] and strings as ""
    oneofs: true,
  });
  return grpc.loadPackageDefinition(definition).pilotta.arena.v1;
}

// The answer to one DecideRequest: { action } or { error } (why there is none).
function answer(request) {
  const legal = request.legal_actions || [];
  if (legal.length === 0) return { error: 'DecideRequest has no legal actions' };
  let action;
  try {
    action = decide(request.observation || {}, legal);
  } catch (err) {
    console.error('decide failed:', err);
    action = legal[0]; // a legal answer beats a strike
  }
  if (!legal.includes(action)) action = legal[0];
  return { action };
}

function makeService() {
  return {
    Handshake(call, callback) {
      // The newest version both speak; a referee older than version 2 lists none and gets version 1.
      const offered = call.request.protocol_versions || [];
      const common = PROTOCOL_VERSIONS.filter((v) => offered.includes(v));
      callback(null, {
        name: NAME,
        version: VERSION,
        author: 'pilotta-arena',
        protocol_version: common.length > 0 ? Math.max(...common) : 1,
        games: GAMES,
        rulesets: GAMES,
      });
    },
    // Version 1: one call per decision.
    Decide(call, callback) {
      const got = answer(call.request);
      if (got.error) callback({ code: grpc.status.INVALID_ARGUMENT, details: got.error });
      else callback(null, { action: got.action });
    },
    // Version 2: the referee's messages on one stream per seat; each decision is answered with its number,
    // notices get no answer. The stream ends when the referee ends its side.
    Play(call) {
      call.on('data', (message) => {
        if (message.body !== 'decide') return; // match_started, deal_ended, match_ended: nothing to answer
        const got = answer(message.decide);
        const reply = got.error ? { error: got.error } : { reply: { action: got.action } };
        call.write({ decision_id: message.decision_id, ...reply });
      });
      call.on('end', () => call.end());
      call.on('error', (err) => console.error('Play stream failed:', err.message));
    },
    MatchStarted(call, callback) {
      callback(null, {});
    },
    DealEnded(call, callback) {
      callback(null, {});
    },
    MatchEnded(call, callback) {
      callback(null, {});
    },
  };
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  const v1 = loadProtocol();
  const server = new grpc.Server();
  server.addService(v1.Bot.service, makeService());
  const health = new HealthImplementation({ '': 'SERVING', 'pilotta.arena.v1.Bot': 'SERVING' });
  health.addToServer(server);
  const address = `${args.host}:${args.port}`;
  server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (err, port) => {
    if (err) {
      console.error(`cannot listen on ${address}: ${err.message}`);
      process.exit(1);
    }
    console.log(`bot ${NAME} listening on ${args.host}:${port}`);
  });
  const shutdown = (signal) => {
    console.log(`bot ${NAME} stopping (${signal})`);
    health.setStatus('', 'NOT_SERVING');
    health.setStatus('pilotta.arena.v1.Bot', 'NOT_SERVING');
    // Let calls in flight finish, but never hang on a stuck client.
    const force = setTimeout(() => server.forceShutdown(), 5000);
    force.unref();
    server.tryShutdown(() => process.exit(0));
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
}

if (require.main === module) {
  main();
}

module.exports = { decide, beats, bestCard, parseBid };
