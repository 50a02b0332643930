"""No farming (issue 24), the attack of the issue replayed: one user registers a random bot and bots under
owner names they invented that crash when it is at the table, and asks for rated challenges between them.
Owners' challenges are never rated (a rated one takes the admin token), a match between bots of one owner
is never rated, a forfeit in a challenge its owner asked for rates nobody, and challenges are counted per
client as well as per owner.  The farmer's rating does not move.  Real Redis; the matches' results are
made as the runner makes them (its rules are the spec's), no bot process is started."""

from __future__ import annotations

import time

import pytest

from arena.api.guard import client_address
from arena.bots.limits import Policy, QuotaExceeded, RateLimit, store_policy
from arena.model import AuthError, MatchResult, MatchSpec, VersionState
from arena.play.ladder import ladder_config
from arena.service import Arena

MANIFEST = {
    "name": "random",
    "version": "1",
    "author": "mallory",
    "language": "python",
    "command": ["python", "bot.py"],
    "port": {"arg": "--port"},
    "games": ["pilotta"],
}


def _upload(arena: Arena, name: str, owner: str) -> tuple[str, str]:
    """An uploaded bot (the kind anyone may add), validated; returns its id and owner token."""
    bot, token = arena.registry.register_package(name, owner, "a" * 64, MANIFEST, ("pilotta",))
    arena.registry.set_state(bot.bot_id, 1, VersionState("validated"))
    return bot.bot_id, token


def _played(spec: MatchSpec, n: int) -> MatchResult:
    """The result of a match in which side 1 (the farmer's victim) forfeits at once, as the runner records
    it: rated as the spec says."""
    a, b = spec.bots
    return MatchResult(
        match_id=spec.match_id,
        ladder=spec.ladder,
        seats=(a, b, a, b),
        winner=0,
        points=(0, 0),
        deals_played=0,
        forfeit=f"bot dud{n} crashed",
        rated=spec.rated,
        finished=float(n),
    )


@pytest.fixture
def arena(r) -> Arena:
    return Arena(r)


def test_the_farming_attack_replayed_leaves_the_farmers_rating_where_it_was(r, arena: Arena) -> None:
    admin = arena.registry.set_admin_token()
    store_policy(r, Policy(challenges_per_minute=100, challenges_queued=100))
    farmer, farmer_token = _upload(arena, "farmer", "mallory")
    # Its victims: one under its own owner name, two under names it made up.
    duds = [_upload(arena, f"dud{i}", owner) for i, owner in enumerate(("mallory", "mal2", "mal3"), 1)]
    lid = arena.scheduler.create_ladder(ladder_config("pilotta", deals=1))
    for bot_id in (farmer, *(d for d, _ in duds)):
        arena.scheduler.join(lid, bot_id)
    before = arena.ratings.get(lid, farmer)
    # 1. Twenty rated challenges, every "owner" consenting (the farmer holds every token): refused.
    for n in range(20):
        dud = f"dud{n % 3 + 1}"
        with pytest.raises(AuthError, match="a rated challenge takes the admin token"):
            arena.challenge(["farmer", dud], farmer_token, lid, rated=True, tokens=[t for _, t in duds])
    # 2. The same twenty unrated (the default): queued and played, every one lost by the dud, none rated.
    specs = [
        arena.challenge(["farmer", f"dud{n % 3 + 1}"], farmer_token, lid, tokens=[t for _, t in duds])
        for n in range(20)
    ]
    assert [s.rated for s in specs] == [False] * 20
    # 3. A scheduled match between the farmer and its own-name dud: an owner on both sides, never rated.
    own = arena.scheduler.create_match(lid, (farmer, duds[0][0]))
    assert own.rated is False
    # ... which an admin's challenge cannot make rated either.
    assert arena.challenge(["farmer", "dud1"], admin, lid, rated=True).rated is False
    for n, spec in enumerate([*specs, own], 1):
        assert arena.ratings.apply(_played(spec, n)) is True
    after = arena.ratings.get(lid, farmer)
    # Not one of the 21 results was rated: the farmer's rating is the prior it started from, 0 games.
    assert (after.mu, after.sigma, after.games) == (before.mu, before.sigma, 0)
    assert arena.ratings.leaderboard(lid) == []


def test_a_challenge_names_the_bots_whose_owners_asked_for_it(r, arena: Arena) -> None:
    """``requested_by``: the runner rates no forfeit by one of them (``forfeited_by in spec.requested_by``)."""
    _farmer, token = _upload(arena, "farmer", "mallory")
    dud, _ = _upload(arena, "dud1", "mal2")
    lid = arena.scheduler.create_ladder(ladder_config("pilotta", deals=1))
    spec = arena.challenge(["dud1", "farmer"], token, lid)
    assert spec.requested_by == (arena.registry.by_name("farmer").bot_id,)
    assert dud not in spec.requested_by  # the dud's owner token was not given: it did not ask


def test_two_bots_of_different_owners_are_rated_on_the_ladder_and_operator_manifests_always(r, arena: Arena) -> None:
    a, _ = _upload(arena, "alice", "alice")
    b, _ = _upload(arena, "bob", "bob")
    lid = arena.scheduler.create_ladder(ladder_config("pilotta", deals=1))
    assert arena.scheduler.create_match(lid, (a, b)).rated is True
    # The operator's own bots (manifests, registered with the admin token) share an owner and are rated:
    # the sample bots of a demo ladder.
    x = arena.registry.register("sample-x", "operator", manifest=MANIFEST, manifest_dir="/tmp")[0].bot_id
    y = arena.registry.register("sample-y", "operator", manifest=MANIFEST, manifest_dir="/tmp")[0].bot_id
    assert arena.scheduler.create_match(lid, (x, y)).rated is True


def test_challenges_are_counted_per_client_as_well_as_per_owner(r, arena: Arena, monkeypatch) -> None:
    # The limiter counts in minutes of the clock: pinned, so that the test cannot cross a minute's end.
    pinned, take = time.time(), RateLimit.take
    monkeypatch.setattr(RateLimit, "take", lambda self, subject, n, now=None: take(self, subject, n, pinned))
    store_policy(r, Policy(challenges_per_minute=3, challenges_queued=100))
    # Three owner names, one client: 3 challenges a minute in all from it (not 3 per name).
    bots = [_upload(arena, f"bot{i}", f"owner{i}") for i in range(3)]
    _upload(arena, "target", "tess")
    lid = arena.scheduler.create_ladder(ladder_config("pilotta", deals=1))
    for i in range(3):
        arena.challenge([f"bot{i}", "target"], bots[i][1], lid, client="10.0.0.7")
    with pytest.raises(QuotaExceeded, match="too many challenges from one client: at most 3 a minute"):
        arena.challenge(["bot0", "target"], bots[0][1], lid, client="10.0.0.7")
    arena.challenge(["bot1", "target"], bots[1][1], lid, client="10.0.0.8")  # another client: its own count


@pytest.mark.parametrize(
    ("peer", "host"),
    [("ipv4:10.0.0.7:51234", "10.0.0.7"), ("ipv6:[::1]:5050", "::1"), ("unix:/tmp/s", "unix:/tmp/s")],
)
def test_a_client_is_its_address_without_the_port(peer: str, host: str) -> None:
    assert client_address(peer) == host
