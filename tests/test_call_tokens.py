"""Call tokens are URL-safe base64 written with binascii (memplug/base/call_tokens.py),
so the prompt hook need not import base64: the tokens, and what a malformed one
raises, are base64's."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memplug.base.call_tokens import TOKEN_PREFIX, decode_token, encode_token
from memplug.base.errors import ValidationError
from memplug.base.text import canonical_json

values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)
payloads = st.dictionaries(st.text(), values, max_size=4).map(lambda d: {"op": "expand", **d})


def by_base64(token: str) -> dict[str, Any] | None:
    """What decode_token gave when it used base64 (None: it raised)."""
    body = token[len(TOKEN_PREFIX) :]
    try:
        data = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode())
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) and "op" in data else None


@given(payloads)
def test_a_token_is_base64s_and_reads_back(data: dict[str, Any]) -> None:
    raw = base64.urlsafe_b64encode(canonical_json(data).encode()).decode().rstrip("=")
    assert encode_token(data) == TOKEN_PREFIX + raw
    assert decode_token(encode_token(data)) == json.loads(canonical_json(data))


@given(st.text(alphabet="AZaz09-_+/=.é\n ", max_size=40) | payloads.map(encode_token))
def test_any_body_reads_as_base64_read_it(text: str) -> None:
    token = text if text.startswith(TOKEN_PREFIX) else TOKEN_PREFIX + text
    expected = by_base64(token)
    if expected is None:
        with pytest.raises(ValidationError):
            decode_token(token)
    else:
        assert decode_token(token) == expected
