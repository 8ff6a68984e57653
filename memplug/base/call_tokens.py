"""Call tokens: the opaque, URL-safe strings behind ``next`` and ``follow``.

A token carries every argument of the call it stands for, so following one needs no
server-side state — except a search query longer than :data:`TOKEN_QUERY_CHARS`: the
token then carries its digest, and the caller passes the same query again with it (a
token must fit a command line; reading commands keep nothing in the database).
"""

from __future__ import annotations

import binascii
import json
from typing import Any

from memplug.base.errors import ValidationError
from memplug.base.text import canonical_json, short_hash

TOKEN_PREFIX = "mp1."
# A longer query rides in a search token as its digest only.
TOKEN_QUERY_CHARS = 1_000
# URL-safe base64 by hand: what base64.urlsafe_b64encode/decode do, without importing
# base64 (and struct) on the prompt hook's path.
_TO_URLSAFE = bytes.maketrans(b"+/", b"-_")
_FROM_URLSAFE = bytes.maketrans(b"-_", b"+/")


def encode_token(data: dict[str, Any]) -> str:
    """An opaque, URL-safe call token carrying every argument the call needs."""
    body = binascii.b2a_base64(canonical_json(data).encode("utf-8"), newline=False)
    raw = body.translate(_TO_URLSAFE).decode("ascii")
    return TOKEN_PREFIX + raw.rstrip("=")


def decode_token(token: str) -> dict[str, Any]:
    if not isinstance(token, str) or not token.startswith(TOKEN_PREFIX) or len(token) > 20_000:
        raise ValidationError("not a memplug call token")
    body = token[len(TOKEN_PREFIX) :]
    try:
        padded = (body + "=" * (-len(body) % 4)).encode("ascii")
        raw = binascii.a2b_base64(padded.translate(_FROM_URLSAFE))
        data = json.loads(raw.decode("utf-8"))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise ValidationError("malformed memplug call token") from None
    if not isinstance(data, dict) or "op" not in data:
        raise ValidationError("malformed memplug call token")
    return data


def is_token(text: str) -> bool:
    return isinstance(text, str) and text.startswith(TOKEN_PREFIX)


def pack_query(args: dict[str, Any]) -> dict[str, Any]:
    """A search's arguments as its ``next`` token keeps them: a long query as a digest."""
    query = str(args.get("query") or "")
    if len(query) <= TOKEN_QUERY_CHARS:
        return args
    return {**args, "query": None, "query_digest": short_hash(query)}


def needs_query(token: str) -> bool:
    """Whether following ``token`` takes the search's query again (see :func:`pack_query`)."""
    try:
        args = decode_token(token).get("a")
    except ValidationError:
        return False
    return isinstance(args, dict) and "query_digest" in args


def unpack_query(args: dict[str, Any], query: str | None) -> dict[str, Any]:
    """The arguments back, a long query's from ``query`` once its digest matches."""
    digest = args.get("query_digest")
    if digest is None:
        return args
    if query is None:
        raise ValidationError(
            f"this next token is for a query over {TOKEN_QUERY_CHARS} characters, which "
            "it does not carry: give the same QUERY with --next"
        )
    if short_hash(query) != digest:
        raise ValidationError("the QUERY given with --next is not the one this token is for")
    return {k: v for k, v in args.items() if k != "query_digest"} | {"query": query}
