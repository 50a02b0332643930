"""Every Redis key the arena uses, in one place.

All keys start with ``pa:`` so an arena can share a Redis with other things
and ``redis-cli --scan --pattern 'pa:*'`` shows exactly our data.  Ids that go
into key names are validated against ``model.ID_RE`` before they get here.
"""

from __future__ import annotations

PREFIX = "pa:"

# ---------------------------------------------------------------- admin / registry

# String: sha256 hex of the admin token (the token itself is never stored).
ADMIN_TOKEN_HASH = PREFIX + "admin:token_sha256"

# String: sha256 hex of the registration key, when the operator requires one (absent: open registration).
REGISTRATION_KEY_HASH = PREFIX + "admin:registration_key_sha256"

# String: the arena's seed secret (64 hex digits), made once (SET NX): every rated match's seed is an HMAC
# of its match id with it (arena.bots.trust.Seeds), so no one outside the arena can know a seed before the
# finished record publishes it.
SEED_SECRET = PREFIX + "admin:seed_secret"

# String: the arena's Policy JSON (arena.bots.limits), written by `arena up/api --policy FILE`; absent: defaults.
POLICY = PREFIX + "config:policy"


def rate(what: str, subject: str, window: int) -> str:
    """String counter with a TTL: events of a kind (``what``) by one subject (a hash) in a one-minute window."""
    return f"{PREFIX}rate:{what.replace(' ', '-')}:{subject}:{window}"


# Hash owner name -> OwnerRecord JSON {token_sha256, created, revoked (unix time, 0: not)}: the owners the
# operator added (``arena owner add``, arena.bots.owners); the owner token itself is never stored.
OWNERS = PREFIX + "owners"

# Hash owner -> how many active (not retired) bots it has: the bots-per-owner cap.
OWNER_BOTS = PREFIX + "bots:per_owner"

# Set of all bot ids ever registered (retired ones included).
BOTS = PREFIX + "bots"

# Hash name -> bot id; HSETNX on it is what makes names unique.
BOT_NAMES = PREFIX + "bots:names"


def bot(bot_id: str) -> str:
    """Hash: name, owner, created, retired, version (current), token_sha256, kind; suspended (the reason),
    start_failures and forfeits_in_a_row (the current version's, counted towards a suspension)."""
    return f"{PREFIX}bot:{bot_id}"


def bot_states(bot_id: str) -> str:
    """Hash: version number -> VersionState JSON {state: pending | validated | rejected, reason, output} of
    each uploaded package version."""
    return f"{PREFIX}bot:{bot_id}:states"


def bot_forfeits(bot_id: str) -> str:
    """List of '1' (forfeited) / '0' (not), newest first, of the current version's last matches, as many as
    the ladder's ``ForfeitLimits.window`` (``Registry.note_forfeit``); emptied when a new version becomes
    current."""
    return f"{PREFIX}bot:{bot_id}:forfeits"


def bot_logs(bot_id: str) -> str:
    """List of BotLog JSON {match_id, version, ts, text}, newest first, the last 20: where an older arena kept
    its owner's logs (``arena.bots.botlogs`` still reads it; nothing writes it now)."""
    return f"{PREFIX}bot:{bot_id}:logs"


def bot_log_index(bot_id: str) -> str:
    """Sorted set match_id -> the time its log was kept (unix seconds): the matches whose owner's log of the
    bot is kept (``bot_log``), pruned by the arena's retention (``arena.bots.botlogs``, ``Policy.logs_*``)."""
    return f"{PREFIX}bot:{bot_id}:log_index"


def bot_log(bot_id: str, match_id: str) -> str:
    """String: BotLog JSON {match_id, version, ts, text}, the bot's stderr of one match for its owner; deleted
    with its ``bot_log_index`` entry."""
    return f"{PREFIX}bot:{bot_id}:log:{match_id}"


def package(digest: str) -> str:
    """String: an uploaded package's bytes (base64), by their sha256; written once (SET NX)."""
    return f"{PREFIX}package:{digest}"


# Stream of package versions to validate: bot_id, version; group ``validators`` (the workers).
VALIDATIONS = PREFIX + "q:validations"
VALIDATOR_GROUP = "validators"


def bot_versions(bot_id: str) -> str:
    """List of BotVersion JSON, oldest first; index i holds version i+1."""
    return f"{PREFIX}bot:{bot_id}:versions"


# -------------------------------------------------------------------- match queue

# Stream of matches to play: fields match_id, spec (MatchSpec JSON).  Entries
# are XDEL'd when acknowledged, so XLEN = matches waiting + being played.
MATCH_STREAM = PREFIX + "q:matches"

# Consumer group of the workers on MATCH_STREAM (one consumer per worker id).
WORKER_GROUP = "workers"

# Set of every match id ever enqueued: makes enqueue idempotent by match id.
ENQUEUED = PREFIX + "q:enqueued"

# Hash match_id -> last failure reason (runner exception), cleared on success
# or dead-lettering; used to explain a dead letter caused by repeated crashes.
LAST_ERROR = PREFIX + "q:last_error"

# Hash match_id -> attempts at it begun (a worker's HINCRBY before it plays), cleared when its result is
# recorded: a later attempt deals from a seed of its own (``arena.bots.trust.Seeds.for_attempt``).
ATTEMPTS = PREFIX + "q:attempts"

# Stream of matches given up on: match_id, msg_id, spec, reason, deliveries, worker.
DEAD_STREAM = PREFIX + "q:dead"

# Counter of results that arrived for an already-recorded match (not counted).
DUPLICATE_RESULTS = PREFIX + "q:duplicate_results"


def result(match_id: str) -> str:
    """String: MatchResult JSON without its record (``arena.store.archive``; results stored before records were
    compressed hold the record too).  SET NX on it is the exactly-once gate; it never expires."""
    return f"{PREFIX}result:{match_id}"


def record(match_id: str) -> str:
    """String: the match's game record, zlib-compressed bytes; a TTL only once it is archived
    (``arena.store.archive``)."""
    return f"{PREFIX}record:{match_id}"


def live(match_id: str) -> str:
    """Stream of a match's public events while it is played (``arena.play.live``): entry ids ``0-1``, ``0-2``,
    ... (the page's cursor), field ``e`` the event's JSON; capped at ``LIVE_MAX_EVENTS`` entries, a TTL
    refreshed at each write, deleted once the match's result is recorded (``arena.play.worker``)."""
    return f"{PREFIX}live:{match_id}"


# Stream of recorded results, one entry per match: fields match_id, ladder.
RESULTS_STREAM = PREFIX + "results"

# Consumer group of the rating updaters on RESULTS_STREAM.
RATINGS_GROUP = "ratings"

# Hash ladder id -> results recorded for it (+1 in the script that records a result), and hash ladder id ->
# its dead letters in DEAD_STREAM (+1 when a match is buried, -1 when it is requeued): each ladder's counts
# in one read, where counting them meant reading both streams from their start (arena.play.queue_counts).
LADDER_COMPLETED = PREFIX + "ladder_counts:completed"
LADDER_DEAD = PREFIX + "ladder_counts:dead"
# String, set once the two hashes were counted from the streams: an arena's data from before the hashes.
LADDER_COUNTS_SINCE = PREFIX + "ladder_counts:since"


def rated(match_id: str) -> str:
    """String marker: set in the same transaction that applies a result to ratings."""
    return f"{PREFIX}rated:{match_id}"


# ------------------------------------------------------------------------- workers


def worker_heartbeat(worker_id: str) -> str:
    """String with TTL: JSON {pid, host, state, match_id, ts}; gone = worker dead."""
    return f"{PREFIX}worker:{worker_id}"


# Sorted set worker id -> last heartbeat (unix s), to list workers cheaply.
WORKERS = PREFIX + "workers"

# A worker is live while its last heartbeat is at most WORKER_LIVE_S old (``worker.live_workers``: the one
# definition, for the feeder, the API, the gauges and the take-over of a dead worker's matches).  Workers
# beat every HEARTBEAT_INTERVAL_S, so a live worker misses four beats in a row before it looks dead.
WORKER_LIVE_S = 10.0
HEARTBEAT_INTERVAL_S = 2.0

# --------------------------------------------------------------------- ladders

# Hash ladder id -> LadderConfig JSON.
LADDERS = PREFIX + "ladders"

# Hash ladder id -> JSON {"started": ts, "budget": total matches or null, "max_in_flight": k}: the ladders
# the API's feeder keeps fed (arena.play.ladder).  Stopping a ladder deletes its field.
LADDER_RUNS = PREFIX + "ladder_runs"

# Hash ladder id -> matches scheduled since the ladder was first started (the budget counts against it).
LADDER_RUNS_SCHEDULED = PREFIX + "ladder_runs:scheduled"

# Hash "<ladder id> <feeder id>" -> matches a feeder has reserved of the budget (counted in
# LADDER_RUNS_SCHEDULED) and not yet enqueued (each enqueue takes one off, in its own script), and hash of the
# same fields -> when it reserved them: a reservation left by a feeder that died mid-tick is given back to
# the budget once it is RESERVATION_STALE_S old (arena.play.ladder).
LADDER_RUNS_RESERVED = PREFIX + "ladder_runs:reserved"
LADDER_RUNS_RESERVED_AT = PREFIX + "ladder_runs:reserved_at"

# Hash ladder name -> ladder id, and its inverse (a ladder has at most one name; ``arena.play.ladder``).
LADDER_NAMES = PREFIX + "ladder_names"
LADDER_NAME_OF = PREFIX + "ladder_names:of"

# String: the id of the default ladder (the one ``leaderboard`` and the web pages show without being told).
DEFAULT_LADDER = PREFIX + "ladder_default"

# A hash that is never written: the in-flight key handed to the dead-letter script for a match without a
# ladder (it only reads counters there, and finds none to release).
NO_LADDER_INFLIGHT = PREFIX + "none"


def ladder_members(ladder: str) -> str:
    """Set of bot ids playing on the ladder."""
    return f"{PREFIX}ladder:{ladder}:members"


def ladder_inflight(ladder: str) -> str:
    """Hash bot id -> matches queued or being played (released on result/dead letter)."""
    return f"{PREFIX}ladder:{ladder}:inflight"


def ladder_pairs(ladder_id: str) -> str:
    """Hash ``<bot>|<bot>`` (ids in order) -> matches the scheduler picked between the two on the ladder:
    the opponents it keeps even (``pairing.pick_pairs``)."""
    return f"{PREFIX}ladder:{ladder_id}:pairs"


def ladder_games(ladder: str) -> str:
    """Hash bot id -> matches scheduled for it on the ladder (played, playing or waiting), the count the
    scheduler keeps even (``pairing.pick_pairs``); a bot joining later starts at the least one."""
    return f"{PREFIX}ladder:{ladder}:games"


def ladder_last_scheduled(ladder: str) -> str:
    """Hash bot id -> unix time it was last put in a match (fairness age)."""
    return f"{PREFIX}ladder:{ladder}:last_scheduled"


def leaderboard(ladder: str) -> str:
    """Sorted set bot id -> conservative rating mu - 3*sigma."""
    return f"{PREFIX}ladder:{ladder}:leaderboard"


def ladder_boards(ladder: str) -> str:
    """List of JSON entries, one per rated match of two bots: its board scores (``arena.rating.batch``)."""
    return f"{PREFIX}ladder:{ladder}:boards"


def ladder_ranked(ladder: str) -> str:
    """Hash bot id -> its ranked version on a gated ladder: the one its ordinary matches play
    (``arena.rating.gating``)."""
    return f"{PREFIX}ladder:{ladder}:ranked"


def ladder_gates(ladder: str) -> str:
    """Hash bot id -> the version of it gating now on the ladder, or gated last (its ``gate`` hash)."""
    return f"{PREFIX}ladder:{ladder}:gates"


def gate(ladder: str, bot_id: str, version: int) -> str:
    """Hash of one version's gate (``arena.rating.gating``): base (the ranked version it plays), boards, total and
    total_sq (of its board scores), matches, started, verdict (empty while it gates), decided, leveled."""
    return f"{PREFIX}ladder:{ladder}:gate:{bot_id}:v{version}"


def rating(ladder: str, bot_id: str) -> str:
    """Hash: mu, sigma, games, wins, losses, draws, last_played, boards."""
    return f"{PREFIX}ladder:{ladder}:rating:{bot_id}"


def rating_history(ladder: str, bot_id: str) -> str:
    """List of JSON {ts, match_id, mu, sigma}, oldest first, capped."""
    return f"{PREFIX}ladder:{ladder}:history:{bot_id}"


def bot_stats(ladder: str, bot_id: str) -> str:
    """Hash of summed counters (model.STAT_COUNTERS), matches, won/lost/drawn/forfeits, and lat:<bucket>
    counts."""
    return f"{PREFIX}ladder:{ladder}:stats:{bot_id}"


def bot_version_stats(ladder: str, bot_id: str, version: int) -> str:
    """The same as ``bot_stats``, of one version of the bot."""
    return f"{PREFIX}ladder:{ladder}:stats:{bot_id}:v{version}"


def head_to_head(ladder: str, bot_id: str) -> str:
    """Hash of the bot's results against each opponent it met alone (one bot a side): ``<opp>|won``,
    ``|lost``, ``|drawn`` (matches), ``|boards``, ``|sum`` and ``|sq`` (of its board scores)."""
    return f"{PREFIX}ladder:{ladder}:h2h:{bot_id}"
