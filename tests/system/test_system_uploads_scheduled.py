"""Only validated uploads play (issue 9): an uploaded bot whose version is pending or rejected is neither
enrolled in a ladder nor a candidate of its scheduler, even once a member, nor challengeable; validated,
it is both; a later version that is rejected leaves the validated one playing. Real Redis, the real
registry, scheduler and ladder enrolment (the validator's verdicts are written as it writes them)."""

from __future__ import annotations

import json

import pytest
from system_helpers import REPO, SAMPLES

from arena.bots.packages import PackageStore, pack, read_manifest
from arena.model import NotPlayable, VersionState
from arena.play.ladder import enrol
from arena.play.scheduler import LadderConfig
from arena.service import Arena

PYBOT = REPO / "tests" / "sandbox" / "packages" / "pybot"


@pytest.mark.timeout(60)
def test_only_a_validated_upload_is_enrolled_scheduled_or_challenged(r, tmp_path):
    arena = Arena(r)
    reg, scheduler = arena.registry, arena.scheduler
    admin = reg.set_admin_token()
    heuristic = json.loads((SAMPLES / "heuristic" / "manifest.json").read_text())
    ref = reg.register("heuristic", "t", manifest=heuristic, manifest_dir=str(SAMPLES / "heuristic"))[0]
    data = pack(PYBOT)
    pm = read_manifest(data)
    up, token = reg.register_package("up", "author", PackageStore(r).put(data), pm.raw, pm.manifest.games)
    config = LadderConfig("pilotta", deals=1, target=None)
    lid = scheduler.create_ladder(config)

    def candidates() -> set[str]:
        return {c.bot_id for c in scheduler.candidates(lid)}

    assert enrol(scheduler, lid, config) == 1  # the heuristic bot alone: the upload is pending
    scheduler.join(lid, up.bot_id)  # a member all the same (as if enrolled before): still not a candidate
    assert candidates() == {ref.bot_id}
    with pytest.raises(NotPlayable, match="no validated version yet"):
        arena.challenge(["up", "heuristic"], admin)
    reg.set_state(up.bot_id, 1, VersionState("rejected", "did not start in the sandbox"))
    assert candidates() == {ref.bot_id}
    reg.set_state(up.bot_id, 1, VersionState("validated"))
    assert candidates() == {ref.bot_id, up.bot_id}
    assert enrol(scheduler, lid, config) == 2
    # A second upload, rejected: version 1 stays current and keeps playing.
    v2 = reg.add_package_version(up.bot_id, token, PackageStore(r).put(data + b"\0"), pm.raw, pm.manifest.games)
    assert v2.version == 2 and reg.get(up.bot_id).version == 1
    reg.set_state(up.bot_id, 2, VersionState("rejected", "its check failed"))
    assert candidates() == {ref.bot_id, up.bot_id} and reg.get(up.bot_id).version == 1
    assert arena.challenge(["up", "heuristic"], admin).bots[0] == up.bot_id


@pytest.mark.timeout(60)
def test_a_new_upload_lifts_a_suspension_once_it_is_validated(r):
    arena = Arena(r)
    reg = arena.registry
    data = pack(PYBOT)
    pm = read_manifest(data)
    up, token = reg.register_package("up", "author", PackageStore(r).put(data), pm.raw, pm.manifest.games)
    reg.set_state(up.bot_id, 1, VersionState("validated"))
    assert [reg.note_start(up.bot_id, 1, True, "no Handshake answer") for _ in range(3)] == [False, False, True]
    assert reg.get(up.bot_id).suspended.endswith("in 3 matches in a row: no Handshake answer")
    assert not reg.playable(reg.get(up.bot_id))
    v2 = reg.add_package_version(up.bot_id, token, PackageStore(r).put(data + b"\0"), pm.raw, pm.manifest.games)
    # Pending, the new upload lifts nothing: the suspended version 1 is still current and must not be
    # scheduled to fail again before version 2 has passed its check.
    assert reg.get(up.bot_id).suspended != "" and reg.get(up.bot_id).current.version == 1
    assert not reg.playable(reg.get(up.bot_id))
    reg.set_state(up.bot_id, v2.version, VersionState("validated"))
    reg.make_current(up.bot_id, v2.version)  # what the validator does with a version that passed
    bot = reg.get(up.bot_id)
    assert bot.suspended == "" and bot.current.version == 2 and reg.playable(bot)
    # The count starts again: two more failures do not suspend it, a third does.
    assert [reg.note_start(up.bot_id, 2, True) for _ in range(3)] == [False, False, True]


@pytest.mark.timeout(60)
def test_a_rejected_upload_leaves_the_suspension_in_place(r):
    reg = Arena(r).registry
    data = pack(PYBOT)
    pm = read_manifest(data)
    up, token = reg.register_package("up", "author", PackageStore(r).put(data), pm.raw, pm.manifest.games)
    reg.set_state(up.bot_id, 1, VersionState("validated"))
    for _ in range(3):
        reg.note_start(up.bot_id, 1, True, "no Handshake answer")
    v2 = reg.add_package_version(up.bot_id, token, PackageStore(r).put(data + b"\0"), pm.raw, pm.manifest.games)
    reg.set_state(up.bot_id, v2.version, VersionState("rejected", "it never answered its Handshake"))
    bot = reg.get(up.bot_id)
    assert bot.suspended != "" and bot.current.version == 1 and not reg.playable(bot)
