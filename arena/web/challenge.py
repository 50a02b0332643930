"""The one page that changes something: a bot's owner challenges another bot from the bot's page.

``POST /bots/NAME/challenge`` with a form body (``application/x-www-form-urlencoded``): ``token`` (the bot's
owner token, or the admin token), ``opponent`` (a bot's name), ``ladder`` (whose settings the match is played
on; may be empty when there is one ladder), ``seed`` (optional, unrated only) and ``rated`` (the admin's only).
The token travels in the body, never in the URL (URLs end up in logs and history).
The challenge is ``Arena.challenge``, the API's own: who may rate what, never rated against one's own bots,
the per-owner and per-client flood limits all hold here as there.

A request is refused before any of that unless it is from one of our own pages (CSRF: another site's page
could otherwise make a visitor's browser post a form with a token it learnt, or try tokens with it): its
``Origin``, or without one its ``Referer``, must be this server's own origin (the pages are sent with
``Referrer-Policy: same-origin``, so a browser names its origin on these posts; a post naming neither is
refused too), and its body is at most ``MAX_BODY_BYTES`` (413 past it, read no further).
"""

from __future__ import annotations

from dataclasses import dataclass
from http import HTTPStatus
from urllib.parse import parse_qs, urlsplit

from arena.bots.limits import QuotaExceeded
from arena.model import (
    AuthError,
    NotPlayable,
    RetiredBotError,
    UnknownBotError,
    UnknownLadderError,
    ValidationError,
)
from arena.service import Arena

MAX_BODY_BYTES = 4096  # a token, a bot name, a seed: a few hundred bytes; more is not a form of ours
FIELD_MAX = 512  # longest value of one field


@dataclass(frozen=True)
class Refused(Exception):
    """A challenge refused: the status and what was wrong, for the page."""

    status: HTTPStatus
    message: str


@dataclass(frozen=True)
class Queued:
    """A challenge queued: its match id, whether it is rated, and the bots by seat (names)."""

    match_id: str
    rated: bool
    bot: str
    opponent: str


def same_origin(origin: str | None, referer: str | None, scheme: str, host: str | None) -> bool:
    """Whether the request comes from a page of ours: ``Origin`` if the browser sent one (``null``, an opaque
    origin, is not ours), else the origin of ``Referer``; ``host`` is the ``Host`` header the client used."""
    if not host:
        return False
    ours = f"{scheme}://{host}".lower()
    if origin is not None:
        return origin.strip().lower() == ours
    if referer:
        parts = urlsplit(referer.strip())
        return f"{parts.scheme}://{parts.netloc}".lower() == ours
    return False


def parse_form(body: bytes) -> dict[str, str]:
    """The form's fields (last value wins); a body that is no UTF-8 form is refused with a 400."""
    try:
        text = body.decode("utf-8")
        fields = parse_qs(text, keep_blank_values=True, strict_parsing=bool(text), max_num_fields=20)
    except (UnicodeDecodeError, ValueError):
        raise Refused(
            HTTPStatus.BAD_REQUEST, "The form could not be read (expected a URL-encoded UTF-8 form)."
        ) from None
    out = {k: v[-1] for k, v in fields.items()}
    for k, v in out.items():
        if len(v) > FIELD_MAX:
            raise Refused(HTTPStatus.BAD_REQUEST, f"The field “{k[:40]}” is too long (at most {FIELD_MAX} characters).")
    return out


def challenge(arena: Arena, bot: str, form: dict[str, str], client: str) -> Queued:
    """Queue the challenge the form asks, through the service; its refusals in the page's words and statuses."""
    token = form.get("token", "").strip()
    opponent = form.get("opponent", "").strip()
    rated = form.get("rated", "") not in ("", "0", "off")
    if not token:
        raise Refused(HTTPStatus.UNAUTHORIZED, "A token is required: the bot's owner token (or the admin token).")
    if not opponent:
        raise Refused(HTTPStatus.BAD_REQUEST, "Name the opponent bot to challenge.")
    raw_seed = form.get("seed", "").strip()
    try:
        seed = int(raw_seed) if raw_seed else 0
    except ValueError:
        raise Refused(HTTPStatus.BAD_REQUEST, "The seed must be a whole number (or empty: the arena deals).") from None
    try:
        spec = arena.challenge([bot, opponent], token, form.get("ladder", "").strip(), seed, rated, client=client)
    except QuotaExceeded as e:
        raise Refused(HTTPStatus.TOO_MANY_REQUESTS, str(e)) from None
    except AuthError as e:  # wrong token, or a rated challenge without the admin token
        raise Refused(HTTPStatus.FORBIDDEN, str(e)) from None
    except (UnknownBotError, UnknownLadderError) as e:  # "unknown bot name X": it names which
        raise Refused(HTTPStatus.NOT_FOUND, f"{str(e)[:1].upper()}{str(e)[1:]}.") from None
    except (RetiredBotError, NotPlayable) as e:
        raise Refused(HTTPStatus.CONFLICT, str(e)) from None
    except ValidationError as e:
        raise Refused(HTTPStatus.BAD_REQUEST, str(e)) from None
    return Queued(match_id=spec.match_id, rated=spec.rated, bot=bot, opponent=opponent)


__all__ = ["MAX_BODY_BYTES", "Queued", "Refused", "challenge", "parse_form", "same_origin"]
