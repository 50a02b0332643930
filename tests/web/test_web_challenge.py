"""The challenge form on a bot's page (issue 26), over real HTTP POSTs to the real page server on a real
Redis: a challenge queued through the service, shown with its match id and link, and every refusal a 4xx
page saying what was wrong (wrong token, a rated challenge by an owner, an unknown opponent, an oversized
body, another site's post, the flood limits).  The queued match is read back from the real queue.
"""

from __future__ import annotations

import html
import json
import re
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlencode

import pytest

from arena.bots.registry import Registry
from arena.store import keys
from arena.web.challenge import MAX_BODY_BYTES

from .browser import chromium_driver, no_errors  # noqa: F401  (chromium_driver: the fixture ``driver``)
from .conftest import Arena

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def owners(arena: Arena) -> dict[str, str]:
    """Bots of owners of their own (name -> owner token); ann has two, bob one, flo two (for the flood test)."""
    reg = Registry(arena.r)
    out = {}
    for name, owner in (
        ("ann1", "ann"),
        ("ann2", "ann"),
        ("bob1", "bob"),
        ("flo1", "flo"),
        ("flo2", "flo"),
        ("cara1", "cara"),
    ):
        out[name] = reg.register(name, owner=owner, endpoint="127.0.0.1:50053")[1]
    return out


def post(
    arena: Arena, path: str, fields: dict[str, str] | bytes, origin: str | None = "", referer: str | None = None
) -> tuple[int, str, Any]:
    """POST a form: (status, body, headers); ``origin`` "" means the server's own, None sends none."""
    if isinstance(fields, dict) and "ladder" not in fields:  # the form's select: one of two ladders
        fields = {**fields, "ladder": arena.ladders["pilotta"]}
    body = fields if isinstance(fields, bytes) else urlencode(fields).encode()
    req = urllib.request.Request(arena.url + path, data=body, method="POST")
    req.add_header("Content-Type", "application/x-www-form-urlencoded")
    if origin is not None:
        req.add_header("Origin", origin or arena.url)
    if referer is not None:
        req.add_header("Referer", referer)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read().decode(), resp.headers
    except urllib.error.HTTPError as e:
        with e:
            return e.code, e.read().decode(), e.headers


def queued_specs(arena: Arena) -> dict[str, dict[str, Any]]:
    return {json.loads(f["spec"])["match_id"]: json.loads(f["spec"]) for _, f in arena.r.xrange(keys.MATCH_STREAM)}


def error_of(page: str) -> str:
    m = re.search(r'<p class="error" id="error">(.*?)</p>', page, re.S)
    assert m, page[:500]
    return html.unescape(m.group(1))


def test_the_bot_page_has_the_form_posting_to_its_own_challenge_path(arena: Arena, owners: dict[str, str]) -> None:
    status, page, headers = arena.get("/bots/ann1")
    assert status == 200
    assert '<form id="challenge-form" class="challenge" method="post" action="/bots/ann1/challenge"' in page
    assert 'type="password" name="token"' in page
    assert f'<option value="{arena.ladders["coinche"]}">' in page
    assert "form-action 'self'" in headers["Content-Security-Policy"]
    assert headers["Referrer-Policy"] == "same-origin"  # so a browser's post names our origin


def test_an_owner_challenges_another_owners_bot_unrated(arena: Arena, owners: dict[str, str]) -> None:
    status, page, headers = post(arena, "/bots/ann1/challenge", {"token": owners["ann1"], "opponent": "bob1"})
    assert status == 200, page[:800]
    assert headers["Cache-Control"] == "no-store"
    mid = html.unescape(re.search(r'<code id="challenge-match-id">(.*?)</code>', page).group(1))
    assert f'href="/replay/{mid}"' in page
    assert "unrated" in page
    spec = queued_specs(arena)[mid]
    reg = Registry(arena.r)
    a, b = reg.by_name("ann1").bot_id, reg.by_name("bob1").bot_id
    assert spec["bots"] == [a, b]
    assert spec["challenge"] is True and spec["rated"] is False
    assert spec["ladder"] == arena.ladders["pilotta"]
    assert spec["requested_by"] == [a]  # ann's consent, not bob's


def test_a_chosen_seed_is_kept_for_an_unrated_challenge(arena: Arena, owners: dict[str, str]) -> None:
    status, page, _ = post(arena, "/bots/bob1/challenge", {"token": owners["bob1"], "opponent": "ann2", "seed": "42"})
    assert status == 200, page[:800]
    mid = html.unescape(re.search(r'<code id="challenge-match-id">(.*?)</code>', page).group(1))
    assert queued_specs(arena)[mid]["seed"] == 42


@pytest.mark.parametrize(
    ("path", "fields", "status", "says"),
    [
        ("/bots/ann1/challenge", {"token": "not-a-token", "opponent": "bob1"}, 403, "token is not valid"),
        ("/bots/ann1/challenge", {"token": "", "opponent": "bob1"}, 401, "A token is required"),
        ("/bots/ann1/challenge", {"token": "{ann1}", "opponent": "bob1", "rated": "1"}, 403, "admin token"),
        ("/bots/ann1/challenge", {"token": "{ann1}", "opponent": "ann2", "rated": "1"}, 403, "admin token"),
        ("/bots/ann1/challenge", {"token": "{ann1}", "opponent": "nobody"}, 404, "Unknown bot name 'nobody'"),
        ("/bots/ann1/challenge", {"token": "{ann1}", "opponent": ""}, 400, "Name the opponent"),
        ("/bots/ann1/challenge", {"token": "{ann1}", "opponent": "bob1", "ladder": "no-such"}, 404, "no-such"),
        ("/bots/ann1/challenge", {"token": "{ann1}", "opponent": "ann1"}, 400, "both sides: ann1"),
        ("/bots/ann1/challenge", {"token": "{ann1}", "opponent": "bob1", "seed": "x"}, 400, "seed must be"),
        ("/bots/nobody/challenge", {"token": "{ann1}", "opponent": "bob1"}, 404, "Unknown bot name 'nobody'"),
        (
            "/bots/ann1/other",
            {"token": "{ann1}", "opponent": "bob1"},
            405,
            "There is no form to post at /bots/ann1/other",
        ),
    ],
)
def test_refusals_are_4xx_pages_naming_what_was_wrong(
    arena: Arena, owners: dict[str, str], path: str, fields: dict[str, str], status: int, says: str
) -> None:
    fields = {k: owners["ann1"] if v == "{ann1}" else v for k, v in fields.items()}
    before = len(queued_specs(arena))
    got, page, _ = post(arena, path, fields)
    assert got == status, page[:800]
    assert says in error_of(page)
    assert len(queued_specs(arena)) == before  # nothing queued


def test_the_token_is_never_read_from_the_url(arena: Arena, owners: dict[str, str]) -> None:
    path = "/bots/ann1/challenge?" + urlencode(
        {"token": owners["ann1"], "opponent": "bob1", "ladder": arena.ladders["pilotta"]}
    )
    got, page, _ = post(arena, path, {"opponent": "bob1"})
    assert got == 401 and "A token is required" in error_of(page)
    status, _, _ = arena.get(path)  # and a GET of the form's path is no way in either
    assert status == 404


def test_an_oversized_body_is_413(arena: Arena, owners: dict[str, str]) -> None:
    body = urlencode({"token": owners["ann1"], "opponent": "bob1", "pad": "x" * MAX_BODY_BYTES}).encode()
    got, page, _ = post(arena, "/bots/ann1/challenge", body)
    assert got == 413
    assert f"at most {MAX_BODY_BYTES} bytes" in error_of(page)


@pytest.mark.parametrize(
    ("origin", "referer"),
    [
        ("http://evil.example", None),
        ("null", None),  # an opaque origin (a sandboxed frame, a data: page)
        (None, None),  # neither header: not shown to be ours
        (None, "http://evil.example/bots/ann1"),
    ],
)
def test_a_post_from_another_site_is_refused(
    arena: Arena, owners: dict[str, str], origin: str | None, referer: str | None
) -> None:
    before = len(queued_specs(arena))
    got, page, _ = post(arena, "/bots/ann1/challenge", {"token": owners["ann1"], "opponent": "bob1"}, origin, referer)
    assert got == 403
    assert "only from the arena's own pages" in error_of(page)
    assert len(queued_specs(arena)) == before


def test_a_referer_of_our_own_page_will_do_without_an_origin(arena: Arena, owners: dict[str, str]) -> None:
    got, page, _ = post(
        arena, "/bots/ann2/challenge", {"token": owners["ann2"], "opponent": "bob1"}, None, arena.url + "/bots/ann2"
    )
    assert got == 200, page[:800]


def test_an_admins_rated_challenge_keeps_the_apis_ladder_rule(arena: Arena, owners: dict[str, str]) -> None:
    admin = Registry(arena.r).set_admin_token()
    # The bots are on no ladder: the admin's rated challenge names that (the API's own rule).
    got, page, _ = post(arena, "/bots/ann1/challenge", {"token": admin, "opponent": "ann2", "rated": "1"})
    assert got == 400 and "a rated challenge is between bots on ladder" in error_of(page)


def test_an_owners_queued_challenges_are_capped(arena: Arena, owners: dict[str, str]) -> None:
    # challenges_queued is 4 per owner (the default policy): the fifth while four wait is refused, 429.
    for _ in range(4):
        got, page, _ = post(arena, "/bots/flo1/challenge", {"token": owners["flo1"], "opponent": "bob1"})
        assert got == 200, page[:800]
    got, page, _ = post(arena, "/bots/flo2/challenge", {"token": owners["flo2"], "opponent": "bob1"})
    assert got == 429
    assert "owner 'flo' has 4 challenges waiting or being played" in error_of(page)


@pytest.mark.timeout(120)
def test_the_form_in_chromium_queues_a_challenge_and_shows_a_refusal(
    arena: Arena, owners: dict[str, str], driver: Any
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import Select, WebDriverWait

    def fill(token: str) -> None:
        driver.get(arena.url + "/bots/cara1")
        driver.find_element(By.ID, "challenge-opponent").send_keys("bob1")
        Select(driver.find_element(By.ID, "challenge-ladder")).select_by_value(arena.ladders["coinche"])
        driver.find_element(By.ID, "challenge-token").send_keys(token)
        form_page = driver.find_element(By.TAG_NAME, "html")
        driver.find_element(By.ID, "challenge-submit").click()
        # The answer is a new page: read it once the form's page is gone, not the form's own h1 (a loaded
        # run read "Bot cara1" there, before the browser had the answer).
        WebDriverWait(driver, 60).until(expected_conditions.staleness_of(form_page))

    fill(owners["cara1"])
    mid = driver.find_element(By.ID, "challenge-match-id").text
    spec = queued_specs(arena)[mid]
    assert spec["ladder"] == arena.ladders["coinche"] and spec["rated"] is False
    link = driver.find_element(By.ID, "challenge-match-link")
    assert link.get_attribute("href") == f"{arena.url}/replay/{mid}"
    no_errors(driver)

    fill("wrong-token-" + "x" * 20)
    assert "403 · Challenge refused" in driver.find_element(By.TAG_NAME, "h1").text
    assert "token is not valid" in driver.find_element(By.ID, "error").text
