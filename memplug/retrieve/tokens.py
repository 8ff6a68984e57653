"""Call tokens: the opaque, URL-safe strings behind ``next`` and ``follow``.

A token carries every argument of the call it stands for, so following one needs no
server-side state.
"""

from __future__ import annotations

import binascii
import json
from typing import Any

from memplug.errors import ValidationError
from memplug.text import canonical_json

TOKEN_PREFIX = "mp1."
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
