"""The minor findings of issue 23, part 3: a corrupt stored result answers GetReplay with a clear DATA_LOSS
naming the match (it was INTERNAL), and an endpoint registration's refusal comes at the same time whatever
the port did (a closed port refused at once and a silent one after the deadline: a port-state oracle). The
two paths are compared by what they do (the same words, the same moment asked for, neither sooner than the
deadline), not by how fast anything is."""

from __future__ import annotations

import socket
import time

import grpc
import pytest
from abuse_helpers import TIMEOUT, rpc_error
from pilotta.arena.v1 import arena_pb2

from arena.bots import trust
from arena.model import EndpointRefused
from arena.store import keys

Code = grpc.StatusCode
DEADLINE_S = 0.5


@pytest.mark.timeout(60)
@pytest.mark.parametrize("stored", ["{not json", '{"match_id": "m-bad"}', "[1, 2]"])
def test_a_corrupt_stored_result_is_a_clear_data_loss(r, stub, stored):
    r.set(keys.result("m-bad"), stored)
    e = rpc_error(lambda: stub.GetReplay(arena_pb2.GetReplayRequest(match_id="m-bad"), timeout=TIMEOUT))
    assert e.code() == Code.DATA_LOSS, e
    assert e.details().startswith("match m-bad: its stored result is unreadable ("), e.details()
    # Another match still answers as before.
    missing = rpc_error(lambda: stub.GetReplay(arena_pb2.GetReplayRequest(match_id="m-none"), timeout=TIMEOUT))
    assert missing.code() == Code.NOT_FOUND


def _refusal(endpoint: str) -> tuple[str, float, float, float]:
    """The refusal's words, the moment it asked to be held until, and when the check began and ended."""
    asked: list[float] = []

    def hold(until: float) -> None:
        asked.append(until)
        trust.hold_until(until)

    began = time.monotonic()
    with pytest.raises(EndpointRefused) as e:
        trust.check_endpoint(endpoint, ["pilotta"], deadline_s=DEADLINE_S, hold=hold)
    ended = time.monotonic()
    (until,) = asked
    return str(e.value).replace(endpoint, "ENDPOINT"), until, began, ended


@pytest.mark.timeout(60)
def test_an_unreachable_endpoint_is_refused_at_the_deadline_whether_closed_or_silent(refused_port):
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        paths = {
            "closed": _refusal(f"127.0.0.1:{refused_port}"),  # refused by the kernel at once
            "silent": _refusal(f"127.0.0.1:{silent.getsockname()[1]}"),  # accepts, never speaks
        }
    words = {why for why, *_ in paths.values()}
    assert words == {f"endpoint ENDPOINT refused: unreachable (no Handshake answer within {DEADLINE_S:g} s)"}
    for name, (_why, until, began, ended) in paths.items():
        # Both held until the deadline after the check began, and neither answered before it.
        assert began + DEADLINE_S <= until <= ended and ended - began >= DEADLINE_S, (name, until - began)
