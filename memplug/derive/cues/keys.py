"""Subject keys: what a key–value statement is about (``the API port is 8080`` → ``api port``).

Two statements are about the same subject only when their keys are the same string;
a later value for a key restates or corrects the earlier item (docs/extraction.md).
"""

from __future__ import annotations

import re

from memplug.base.patterns import LazyPattern, lazy
from memplug.base.text import cjk_run
from memplug.derive.cues.rules import is_label

_DETERMINERS = frozenset("the a an our my your their its this that these those".split())
_NOT_A_SUBJECT = frozenset(
    """it this that there here he she they we i you what which who everything nothing
    something anything all one today now then yes no ok okay""".split()
)
_KEY_STOPS = frozenset(
    """is are was were be been do does did have has had will would can could should must
    may might not never always decided think know want need use uses used and or but if
    when because so to of in on for with at""".split()
)
_FILLER = (
    r"^(?:(?:so|and|but|also|ok(?:ay)?|well|now|that|we|you|let's|let\s+us|to|please|"
    r"should|can|could|will|shall|just)[,\s]+)*"
)
_KEY_WORDS = r"(?P<key>[a-z][\w\-./']*(?:\s+[a-z0-9][\w\-./']*){0,4}?)"
_KV_EN: tuple[LazyPattern, ...] = (
    lazy(
        _FILLER + _KEY_WORDS + r"\s+(?:is|are|=|==|:=|should\s+be|must\s+be|will\s+be|stays|"
        r"remains|becomes|(?:was|has\s+been|is)\s+(?:changed|moved|set)\s+to|is\s+set\s+to)"
        r"(?:\s+(?:now|still|currently|actually))?\s+(?P<value>\S.{0,160})$",
        re.IGNORECASE,
    ),
    lazy(
        _FILLER + r"(?:set|change|switch|move|update|bump|raise|lower|increase|decrease|reduce)"
        r"\s+" + _KEY_WORDS + r"\s+(?:from\s+\S+\s+)?to\s+(?P<value>\S.{0,160})$",
        re.IGNORECASE,
    ),
)
_KV_COLON = lazy(r"^(?P<key>[a-z][\w\-. ]{0,30}?)\s*[:=]\s*(?P<value>\S.{0,160})$", re.IGNORECASE)
# Keys a `key: value` line may have whatever its value ("Deadline: Friday").
_KEY_VOCAB = frozenset(
    """port host hostname url uri endpoint api version branch tag commit env environment
    region zone database db schema table user username owner deadline due timeout limit
    budget path dir directory folder file model language locale timezone tz email status
    priority stack framework runtime python node os platform cluster namespace bucket
    queue topic channel repo repository package library license editor shell ci registry
    image container memory cpu ram disk size target release milestone sprint ticket
    project team reviewer assignee date time cost price currency account server service
    proxy password token key secret""".split()
)
# A value that is a fact by its shape: a number, a version, a path, a host:port, a URL,
# an identifier ("8080", "v2.3", "src/app.py", "db:5432", "api_key").
_FACT_VALUE = lazy(r"^(?:[~./\\]|\d|v\d|`|https?://|\S*\w[/\\:]\w|\S*\w[._]\w)\S*(?:\s+\S+){0,3}$")
_KV_ZH = lazy(
    r"^(?:我们的|我的|这个|那个|把|将)?(?P<key>[^\s，,。；;：:！？!?]{1,16}?)"
    r"(?:现在|目前|仍然|还)?(?:是|为|改为|改成|设为|设置为|用的是|等于)\s*"
    r"(?P<value>[^，,。；;！？!?]{1,40})"
)
_ZH_KEY_BAD_START = lazy(r"^(?:我|你|他|她|它|这|那|谁|什么|哪|有)")
_ZH_KEY_BAD_END = lazy(r"(?:但|还|就|于|可|总|只|要|不|真|正|也|都|又|而|若|凡|或|否)$")
# A value that names something: a digit, a capitalised name, a symbol, a quote, or one
# of a few settings words. "The build is broken" has a subject but no such value.
_VALUE_SHAPE = lazy(
    r"\d|(?<![\w'])[A-Z]|\w[._/:@\-]\w|[`\"'“”‘’]"
    r"|\b(?:on|off|true|false|enabled|disabled|required|optional)\b"
)


def _clean_key(words: list[str]) -> str | None:
    while words and words[0] in _DETERMINERS:
        words = words[1:]
    words = [w.strip(".,'\"") for w in words]
    words = [w[:-2] if w.endswith("'s") else w for w in words if w]
    if not words or len(words) > 4:
        return None
    if words[0] in _NOT_A_SUBJECT or any(w in _KEY_STOPS for w in words):
        return None
    return " ".join(words)


def kv_colon(text: str) -> tuple[str, str] | None:
    """``key: value`` when it is one: a known key, or a fact-shaped value after a key
    that is not a capitalised name. "Melanie: Thanks!" is a speaker, not a subject."""
    match = _KV_COLON.match(text)
    # "Suggestion: …" said by a user is no cue, and no subject either.
    if match is None or is_label(text):
        return None
    raw, value = match.group("key").strip(), match.group("value")
    words = raw.lower().split()
    known = bool(words) and words[-1] in _KEY_VOCAB
    name_like = re.fullmatch(r"[A-Z][a-z'’]+(?:\s+[A-Z][a-z'’]+)?", raw) is not None
    if not known and (name_like or not _FACT_VALUE.match(value.strip())):
        return None
    key = _clean_key(words)
    return (key, value) if key else None


def _key_value(text: str) -> tuple[str, str] | None:
    body = text.strip()
    for pattern in _KV_EN:
        match = pattern.match(body)
        if match:
            key = _clean_key(match.group("key").lower().split())
            if key:
                return key, match.group("value")
    colon = kv_colon(body)
    if colon is not None:
        return colon
    match = _KV_ZH.match(body)
    if match:
        key = re.sub(r"^(?:我们的|我的)", "", match.group("key"))
        if (
            len(key) >= 2
            and not _ZH_KEY_BAD_START.search(key)
            and not _ZH_KEY_BAD_END.search(key)
            and "不" not in key
            and "没" not in key
        ):
            return key.lower(), match.group("value")
    return None


def subject_key(text: str, *, need_value: bool = False) -> str | None:
    """The subject a key–value statement is about (``the API port is 8080`` → ``api port``).

    Mechanical on purpose: two statements are about the same subject only when this
    returns the same string, and ``memory inspect`` shows it so a person can see why.
    With ``need_value`` the value must look like one (see ``_VALUE_SHAPE``): that is
    what an uncued sentence needs before it may restate anything.
    """
    found = _key_value(text)
    if found is None:
        return None
    key, value = found
    # A value is short: "9090", "Friday", "db-staging-2 on port 5433"; a clause such as
    # "to do a triathlon in 12 weeks" is a story about the subject, not its value.
    short = len(value.split()) <= 6
    if need_value and not (short and (_VALUE_SHAPE.search(value) or cjk_run().search(value))):
        return None
    return key
