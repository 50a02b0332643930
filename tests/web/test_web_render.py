"""The templates on their own: autoescaping of every value (text and attributes), URL quoting, a typo in a
template is an error (not a blank), and the plot's geometry worked out by hand."""

from __future__ import annotations

import jinja2
import pytest

from arena.web.render import Pages, plot

HOSTILE = '"><script>alert(1)</script>'


@pytest.fixture(scope="module")
def pages() -> Pages:
    return Pages()


@pytest.mark.smoke  # make check runs it: the web pages' templates render
def test_values_are_escaped_in_text_and_attributes(pages: Pages) -> None:
    match = {
        "match_id": "m-1",
        "ladder": HOSTILE,
        "seats": [HOSTILE, "b-2", HOSTILE, "b-2"],
        "winner": 1,
        "points": [3, 7],
        "forfeit": f"bot {HOSTILE} crashed",  # its generic part is shown in a title="" attribute
        "deals_played": 2,
        "finished": 0,
    }
    page = pages.render(
        "matches.html",
        title="Matches",
        active="matches",
        matches=[match],
        names={HOSTILE: HOSTILE, "b-2": "two"},
        ladders=(HOSTILE,),
        ladder=HOSTILE,
        bot_name=HOSTILE,
        cursor="1-0",
        ladder_names={HOSTILE: HOSTILE},  # the ladder's name is escaped as everything else
    )
    assert "<script>" not in page
    assert "&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert 'title="bot &#34;&gt;&lt;script&gt;' in page  # the forfeit reason, inside an attribute
    assert 'href="/bots/%22%3E%3Cscript%3Ealert%281%29%3C%2Fscript%3E"' in page  # a path, quoted
    assert '<td class="won"><a href="/bots/two">two</a></td>' in page  # side 1 won
    assert 'id="older" href="/matches?ladder=%22%3E' in page


def test_an_undefined_name_in_a_template_is_an_error(pages: Pages) -> None:
    with pytest.raises(jinja2.UndefinedError):
        pages.render("error.html", title="t", active="", status=404)  # no message


def test_plot_geometry_by_hand() -> None:
    # Two points 100 s apart, values 10 and 20: y padded by 8 % of the range (0.8) each side.
    p = plot([("a", [(0.0, 10.0), (100.0, 20.0)])], "t", width=218, height=144)
    assert p is not None
    assert (p.left, p.top, p.pw, p.ph) == (48, 14, 0, 100)  # 218 - 48 - 170 = 0 wide: x collapses to left
    (line,) = p.lines
    # y = top + (1 - (v - 9.2) / 11.6) * 100: 10 -> 107.1, 20 -> 20.9.
    assert line.path == "M48.0,107.1H48.0V20.9H48"
    assert line.marks == (("48.0", "107.1"), ("48.0", "20.9"))
    assert plot([("a", [])], "t") is None
