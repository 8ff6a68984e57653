"""Numbers with their unit and the conditions that qualify them in the same clause.

A bare number quoted back to a model is a trap: ``p95 < 200 ms`` means nothing without
``at 1k rps``. So every number keeps its raw text, unit, comparator, the metric it
measures and the condition phrases of its clause; a plain quantity with neither unit
nor condition is ``flagged`` so that whoever injects it can warn.

Pure and deterministic: the result depends on the text alone.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

from msgspec import Struct, field

from memplug.base.patterns import LazyPattern, lazy

# fmt: off
_LATIN_UNITS: dict[str, str] = {
    # time
    "milliseconds": "ms", "millisecond": "ms", "msec": "ms", "ms": "ms",
    "microseconds": "µs", "µs": "µs", "us": "µs", "ns": "ns",
    "seconds": "s", "second": "s", "secs": "s", "sec": "s", "s": "s",
    "minutes": "min", "minute": "min", "mins": "min", "min": "min",
    "hours": "h", "hour": "h", "hrs": "h", "hr": "h", "h": "h",
    "days": "d", "day": "d", "weeks": "wk", "week": "wk",
    "months": "mo", "month": "mo", "years": "y", "year": "y",
    # size and bandwidth ("3gb" is written often enough to accept)
    "bytes": "B", "byte": "B", "B": "B",
    "KiB": "KiB", "MiB": "MiB", "GiB": "GiB", "TiB": "TiB",
    "KB": "KB", "kB": "KB", "kb": "KB", "MB": "MB", "mb": "MB", "GB": "GB", "gb": "GB",
    "TB": "TB", "tb": "TB", "PB": "PB",
    "Kbps": "Kbps", "Mbps": "Mbps", "Gbps": "Gbps",
    # rates and ratios
    "percent": "%", "%": "%", "x": "x", "×": "x",
    "requests/s": "req/s", "req/s": "req/s", "ops/s": "ops/s",
    "rps": "rps", "qps": "qps", "tps": "tps", "rpm": "rpm", "fps": "fps",
    "GHz": "GHz", "MHz": "MHz",
    # counted things
    "requests": "requests", "request": "requests", "req": "requests",
    "users": "users", "user": "users", "tokens": "tokens", "token": "tokens",
    "items": "items", "rows": "rows", "records": "records", "lines": "lines",
    "files": "files", "characters": "chars", "chars": "chars", "words": "words",
    "retries": "retries", "attempts": "attempts", "times": "times",
    "workers": "workers", "threads": "threads", "processes": "processes",
    "cores": "cores", "vCPUs": "vCPUs", "CPUs": "CPUs", "nodes": "nodes",
    "replicas": "replicas", "instances": "instances", "pods": "pods",
    "connections": "connections", "shards": "shards", "partitions": "partitions",
    "px": "px", "USD": "USD", "EUR": "EUR", "dollars": "USD", "euros": "EUR",
}
# Units written right after a number in Chinese; they need no word boundary.
_CJK_UNITS: dict[str, str] = {
    "毫秒": "ms", "微秒": "µs", "秒钟": "s", "秒": "s", "分钟": "min",
    "小时": "h", "天": "d", "周": "wk", "个月": "mo", "年": "y",
    "个": "个", "次": "次", "条": "条", "行": "行", "人": "人", "台": "台",
    "字": "字", "倍": "x", "元": "元", "美元": "USD", "核": "cores",
    "线程": "threads", "节点": "nodes", "副本": "replicas", "用户": "users",
}
_PER: dict[str, str] = {
    "second": "s", "sec": "s", "s": "s", "minute": "min", "min": "min",
    "hour": "h", "hr": "h", "h": "h", "day": "d", "week": "wk", "month": "mo",
    "year": "y", "request": "request", "user": "user", "node": "node",
    "instance": "instance", "core": "core",
    "秒": "s", "分钟": "min", "小时": "h", "天": "d", "日": "d", "周": "wk",
    "月": "mo", "年": "y",
}
_CURRENCY = {"$": "USD", "€": "EUR", "£": "GBP", "¥": "CNY"}
_MAGNITUDE = {"k": Decimal(1_000), "K": Decimal(1_000), "M": Decimal(1_000_000),
              "千": Decimal(1_000), "万": Decimal(10_000), "亿": Decimal(100_000_000)}
_COMPARATORS: dict[str, str] = {
    "<=": "<=", ">=": ">=", "≤": "<=", "≥": ">=", "<": "<", ">": ">", "==": "=", "=": "=",
    "~": "~", "≈": "~", "±": "±",
    "less than": "<", "fewer than": "<", "under": "<", "below": "<",
    "no more than": "<=", "not more than": "<=", "at most": "<=", "up to": "<=",
    "within": "<=", "more than": ">", "greater than": ">", "over": ">", "above": ">",
    "exceeding": ">", "no less than": ">=", "at least": ">=", "about": "~",
    "around": "~", "roughly": "~", "approximately": "~",
    "小于等于": "<=", "大于等于": ">=", "小于": "<", "低于": "<", "少于": "<",
    "不超过": "<=", "至多": "<=", "最多": "<=", "大于": ">", "高于": ">", "多于": ">",
    "超过": ">", "不少于": ">=", "不低于": ">=", "至少": ">=", "最少": ">=",
    "大约": "~", "约": "~",
}
_POSTFIX_COMPARATORS: dict[str, str] = {
    "or less": "<=", "or fewer": "<=", "or below": "<=", "or more": ">=", "or above": ">=",
    "以内": "<=", "之内": "<=", "以下": "<=", "以上": ">=", "内": "<=",
}
# fmt: on
# Case-insensitive spellings; the rest (B, KB, GB, …) keep their case to mean bytes.
_CASE_FREE = {u for u in _LATIN_UNITS if u.lower() == u and u not in {"s", "h", "x", "us"}}
# What a number measures, when the word right before it names it.
_METRICS = (
    r"p\d{2,3}(?:\.\d)?|port|latency|throughput|timeout|ttl|limit|budget|memory|ram|"
    r"cpu|disk|uptime|availability|error rate|size|max|min|mean|median|average|avg|"
    r"rate|quota|retention|deadline|concurrency|pool size|batch size|"
    r"延迟|端口|超时|内存|吞吐量?|错误率|可用性|配额|并发"
)
# Prepositions that open a qualifying phrase ("at 1k rps", "in staging", "for free users").
_CONDITION_WORDS = frozenset(
    "at under with when during for on in if while given across unless until before after"
    " per".split()
)
_STOP_WORDS = frozenset("and but or so because which that then where".split())

_NUMBER_CORE = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+"
_LEFT_EDGE = r"(?<![A-Za-z0-9_.#/\\])"


def _alternation(words: dict[str, str] | tuple[str, ...] | set[str]) -> str:
    return "|".join(re.escape(w) for w in sorted(words, key=lambda w: (-len(w), w)))


_LATIN_UNIT_RE = lazy(
    rf"(?:{_alternation(_LATIN_UNITS)})(?![A-Za-z0-9_])"
    rf"|(?i:{_alternation(_CASE_FREE)})(?![A-Za-z0-9_])"
)
_CJK_UNIT_RE = lazy(_alternation(_CJK_UNITS))
_PER_RE = lazy(
    rf"(?:\s*/\s*|\s+per\s+|\s+an?\s+|\s*每)(?P<per>{_alternation(_PER)})(?![A-Za-z])",
    re.IGNORECASE,
)
_POSTFIX_RE = lazy(rf"\s?(?P<cmp>{_alternation(_POSTFIX_COMPARATORS)})(?![A-Za-z])")
_COMPARATOR_BEFORE = lazy(rf"(?:(?<![A-Za-z])(?:{_alternation(_COMPARATORS)}))\s*$", re.IGNORECASE)
_METRIC_BEFORE = lazy(
    rf"(?<![A-Za-z0-9])(?P<metric>{_METRICS})"
    r"\s*(?:is|are|was|should be|must be|stays|remains|of|=|:|：|是|为|在)?\s*$",
    re.IGNORECASE,
)
_QUANTITY = lazy(
    rf"{_LEFT_EDGE}(?P<cur>[$€£¥])?(?P<num>{_NUMBER_CORE})"
    r"(?P<mag>[kKM](?![A-Za-z0-9])|[千万亿])?"
)
_VERSION_WORDS = (
    r"version|ver\.?|python|node(?:\.js)?|golang|go|java|ruby|rust|postgres(?:ql)?|pg|"
    r"mysql|redis|sqlite|django|rails|react|vue|ubuntu|debian|kernel|版本"
)
_MAJOR_WORDS = (
    r"python|node(?:\.js)?|java|ruby|postgres(?:ql)?|mysql|mariadb|redis|django|rails|react|"
    r"vue|angular|ubuntu|debian|fedora|kernel|php|dotnet|\.net"
)
# Patterns that are numbers of another sort and must not be read as quantities.
_SPECIAL: tuple[tuple[str, LazyPattern], ...] = (
    ("date", lazy(r"(?<!\d)\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?Z?)?(?!\d)")),
    ("mapping", lazy(r"(?<![\d:.])\d{2,5}:\d{2,5}(?![\d:])")),
    ("address", lazy(r"(?<![\d.])\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?(?![\d.])")),
    (
        "version",
        lazy(r"(?<![A-Za-z0-9_.])[vV](?P<v>\d+(?:\.\d+)*(?:-[0-9A-Za-z.]+)?)(?![\w.])"),
    ),
    ("version", lazy(r"(?<![A-Za-z0-9_.])(?P<v>\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)?)(?![\w.])")),
    (
        "version",
        lazy(rf"(?i:(?<![A-Za-z])(?:{_VERSION_WORDS}))\s*(?P<v>\d+(?:\.\d+)+)(?![\w.])"),
    ),
    (
        # After a product's name a bare major is a version too ("MySQL 8", "Node 20").
        "version",
        lazy(rf"(?i:(?<![A-Za-z])(?:{_MAJOR_WORDS}))\s+(?P<v>\d{{1,2}})(?![\w.%])"),
    ),
    (
        "port",
        lazy(r"(?i:(?<![\w.])(?:localhost|[A-Za-z][\w-]*(?:\.[\w-]+)+)):(?P<v>\d{2,5})(?!\d)"),
    ),
    (
        "time",
        lazy(r"(?<![\d:])\d{1,2}:\d{2}(?::\d{2})?(?:\s?(?:am|pm))?(?![\d:])", re.IGNORECASE),
    ),
    ("time", lazy(r"(?<![\w.])\d{1,2}\s?(?:am|pm)(?![A-Za-z])", re.IGNORECASE)),
    ("ref", lazy(r"#\d+")),
)
_CJK_PER_BEFORE = lazy(r"每(?P<per>分钟|小时|秒|天|日|周|月|年)\s*$")
_LOOKBACK = 80
_CLAUSE_SPLIT = lazy(r"(?<=[.!?])\s+|[;；。！？\n]")
_CJK_CONDITIONS = (
    lazy(r"在(?P<c>[^，,。；;！？\n]{1,24}?)(?:的情况)?(?:下|时|期间|期)"),
    lazy(r"当(?P<c>[^，,。；;！？\n]{1,24}?)时"),
    lazy(r"(?:如果|若)(?P<c>[^，,。；;！？\n]{1,24})"),
)


class Number(Struct, frozen=True):
    """One number found in text, with everything needed to quote it honestly."""

    raw: str
    value: int | float | str
    kind: str  # quantity | port | version | date | time | address | ref
    unit: str | None = None
    comparator: str | None = None
    metric: str | None = None
    per: str | None = None
    conditions: tuple[str, ...] = ()
    start: int = field(default=0)
    end: int = field(default=0)

    @property
    def flagged(self) -> bool:
        """A plain quantity with neither unit nor condition says too little to be used."""
        return (
            self.kind == "quantity"
            and self.unit is None
            and self.per is None
            and not self.conditions
        )

    def to_dict(self) -> dict[str, Any]:
        """The stored JSON shape (``numbers_json``); spans are left out on purpose."""
        return {
            "raw": self.raw,
            "value": self.value,
            "kind": self.kind,
            "unit": self.unit,
            "comparator": self.comparator,
            "metric": self.metric,
            "per": self.per,
            "conditions": list(self.conditions),
            "flagged": self.flagged,
        }


class _Found(Struct):
    start: int
    end: int
    kind: str
    value: int | float | str
    unit: str | None = None
    comparator: str | None = None
    metric: str | None = None
    per: str | None = None
    raw_start: int = 0
    # Where the condition word right before the number starts ("at" in "at 1k rps").
    intro_start: int | None = None
    conditions: list[str] = field(default_factory=list)


class _Phrase(Struct, frozen=True):
    start: int
    text: str
    leading: bool
    cjk: bool = False


def _to_value(digits: str, magnitude: str | None) -> int | float:
    try:
        number = Decimal(digits.replace(",", ""))
    except InvalidOperation:
        return 0
    if magnitude:
        number *= _MAGNITUDE[magnitude]
    if number == number.to_integral_value():
        return int(number)
    return float(number)


def _read_unit(text: str, pos: int) -> tuple[str | None, int]:
    """The unit starting at ``pos`` (after at most one space), and where it ends."""
    cjk = _CJK_UNIT_RE.match(text, pos)
    if cjk:
        return _CJK_UNITS[cjk.group(0)], cjk.end()
    for gap in ("", " "):
        start = pos + len(gap)
        if text[pos:start] != gap:
            continue
        match = _LATIN_UNIT_RE.match(text, start)
        if not match:
            continue
        spelled = match.group(0)
        # "x" and "×" mean "times" only when glued to the number or set off as ×.
        if spelled == "x" and gap:
            continue
        unit = _LATIN_UNITS.get(spelled) or _LATIN_UNITS.get(spelled.lower())
        return unit, match.end()
    return None, pos


def _clauses(text: str) -> list[tuple[int, int]]:
    spans = []
    start = 0
    for match in _CLAUSE_SPLIT.finditer(text):
        if match.start() > start:
            spans.append((start, match.start()))
        start = match.end()
    if start < len(text):
        spans.append((start, len(text)))
    return spans


def _specials(text: str) -> list[_Found]:
    found: list[_Found] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in _SPECIAL:
        for match in pattern.finditer(text):
            span = match.span()
            if any(span[0] < end and start < span[1] for start, end in taken):
                continue
            taken.append(span)
            value: int | float | str = (
                match.group("v") if "v" in pattern.groupindex else match.group(0)
            )
            if kind == "port":
                value = int(value)
            start = match.start("v") if kind == "port" else span[0]
            found.append(_Found(start, span[1], kind, value, raw_start=span[0]))
    return found


def _quantities(text: str, blocked: list[tuple[int, int]]) -> list[_Found]:
    found: list[_Found] = []
    for match in _QUANTITY.finditer(text):
        start, end = match.span()
        if any(start < b_end and b_start < end for b_start, b_end in blocked):
            continue
        # "utf8", "p95", "x86_64": digits glued to letters are names, not numbers.
        if start > 0 and text[start - 1].isalpha() and text[start - 1].isascii():
            continue
        # "db-staging-2", "SHOP-311", "utf-8": a hyphen glues the digits to a name.
        if start > 1 and text[start - 1] == "-" and text[start - 2].isalnum():
            continue
        unit, after = _read_unit(text, end)
        if match.group("cur"):
            unit = _CURRENCY[match.group("cur")]
        if unit is None and after < len(text) and re.match(r"[A-Za-z0-9_]", text[after]):
            continue  # "3rd", "123abc"
        item = _Found(
            start,
            after,
            "quantity",
            _to_value(match.group("num"), match.group("mag")),
            unit=unit,
            raw_start=start,
        )
        per = _PER_RE.match(text, after)
        if per and (unit is not None or per.group(0).strip().startswith(("/", "每"))):
            item.per = (
                _PER[per.group("per").lower()]
                if per.group("per").lower() in _PER
                else _PER[per.group("per")]
            )
            item.end = per.end()
        post = _POSTFIX_RE.match(text, item.end)
        if post:
            item.comparator = _POSTFIX_COMPARATORS[post.group("cmp")]
            item.end = post.end()
        found.append(item)
    return found


def _qualify(text: str, item: _Found, clause_start: int) -> None:
    """Comparator, metric, rate and introducing condition word from the text just before."""
    # Only the last few words can qualify a number; a bounded window keeps long
    # clauses linear.
    window_start = max(clause_start, item.raw_start - _LOOKBACK)
    head = text[window_start : item.raw_start]
    cmp = _COMPARATOR_BEFORE.search(head)
    if cmp:
        item.comparator = item.comparator or _COMPARATORS[cmp.group(0).strip().lower()]
        item.raw_start = window_start + cmp.start()
        head = head[: cmp.start()]
    per = _CJK_PER_BEFORE.search(head)
    if per and item.per is None:
        item.per = _PER[per.group("per")]
        item.raw_start = window_start + per.start()
        head = head[: per.start()]
    metric = _METRIC_BEFORE.search(head)
    if metric:
        item.metric = metric.group("metric").lower()
        item.raw_start = window_start + metric.start()
        head = head[: metric.start()]
        if (
            item.metric == "port"
            and item.kind == "quantity"
            and item.unit is None
            and isinstance(item.value, int)
            and 0 < item.value < 65536
        ):
            item.kind = "port"
    word = re.search(r"(?<![A-Za-z])([A-Za-z]+)\s+$", head)
    if word and word.group(1).lower() in _CONDITION_WORDS:
        item.intro_start = window_start + word.start(1)


def _segment_break(text: str, start: int, end: int) -> bool:
    """A comma or semicolon between two positions: a condition does not reach across."""
    return bool(re.search(r"[,;，；:：]", text[start:end]))


def _phrases(text: str, start: int, end: int, primaries: list[_Found]) -> list[_Phrase]:
    """Qualifying phrases of one clause, each with whether it leads the clause."""
    phrases: list[_Phrase] = []
    clause = text[start:end]
    spans = [(p.raw_start - start, p.end - start) for p in primaries]
    words = list(re.finditer(r"[A-Za-z][A-Za-z'-]*|[^\sA-Za-z]+", clause))
    first_word = next((w.start() for w in words if w.group(0)[0].isalpha()), -1)
    i = 0
    while i < len(words):
        word = words[i]
        if word.group(0).lower() not in _CONDITION_WORDS or any(
            s <= word.start() < e for s, e in spans
        ):
            i += 1
            continue
        stop, cut_by_number, j = len(clause), False, i + 1
        while j < len(words):
            token = words[j]
            lower = token.group(0).lower()
            if any(s == token.start() for s, _ in spans):
                stop, cut_by_number = token.start(), True
                break
            if (
                lower in _CONDITION_WORDS
                or lower in _STOP_WORDS
                or j - i > 8
                or re.match(r"[,:;—()?!]", token.group(0))
            ):
                stop = token.start()
                break
            j += 1
        phrase = clause[word.start() : stop].strip().rstrip(".,?!")
        # "with a 30 minute TTL": the preposition governs the number itself.
        if not cut_by_number and len(phrase.split()) >= 2:
            phrases.append(
                _Phrase(start + word.start(), phrase, leading=word.start() == first_word)
            )
        i = j
    for pattern in _CJK_CONDITIONS:
        for match in pattern.finditer(clause):
            leading = not clause[: match.start()].strip()
            phrases.append(_Phrase(start + match.start(), match.group(0), leading, cjk=True))
    phrases.sort(key=lambda p: p.start)
    return phrases


def _is_conditional(text: str, item: _Found, clause: list[_Found], c_start: int) -> bool:
    """Whether ``item`` only qualifies another number of its clause (``at 1k rps``)."""
    if item.intro_start is None:
        return False
    anchors = [f for f in clause if f.intro_start is None and f is not item]
    for anchor in anchors:
        if anchor.end <= item.intro_start and not _segment_break(
            text, anchor.end, item.intro_start
        ):
            return True
    leading = not text[c_start : item.intro_start].strip()
    return leading and any(a.start > item.end for a in anchors)


def extract_numbers(text: str) -> list[Number]:
    """Every number in ``text`` in reading order, each with unit, comparator and conditions.

    Numbers that only qualify another one (``1k rps`` in ``p95 < 200 ms at 1k rps``)
    become that number's condition rather than numbers of their own.
    """
    if not text or not any(ch.isdigit() for ch in text):
        return []
    specials = _specials(text)
    blocked = [(f.raw_start, f.end) for f in specials]
    items = sorted(specials + _quantities(text, blocked), key=lambda f: f.start)
    out: list[Number] = []
    for c_start, c_end in _clauses(text):
        clause = [f for f in items if c_start <= f.start < c_end]
        if not clause:
            continue
        for item in clause:
            if item.kind in ("quantity", "port"):
                _qualify(text, item, c_start)
        cjk_spans = [
            (c_start + m.start(), c_start + m.end())
            for pattern in _CJK_CONDITIONS
            for m in pattern.finditer(text, c_start, c_end)
        ]
        for item in clause:
            for span_start, span_end in cjk_spans:
                if item.intro_start is None and span_start <= item.start < span_end:
                    item.intro_start = span_start
        conditional = [f for f in clause if _is_conditional(text, f, clause, c_start)]
        if conditional and len(conditional) == len(clause):
            conditional = []
        primaries = [f for f in clause if f not in conditional]
        for phrase in _phrases(text, c_start, c_end, primaries):
            if any(p.raw_start <= phrase.start < p.end for p in primaries):
                continue
            before = [
                p
                for p in primaries
                if p.end <= phrase.start and not _segment_break(text, p.end, phrase.start)
            ]
            if before:
                targets = [before[-1]]
            elif phrase.leading:
                # "At 1k rps, p95 < 200 ms and p99 < 500 ms": a leading phrase
                # qualifies every number of its clause.
                targets = primaries
            else:
                targets = []
            for target in targets:
                if phrase.text not in target.conditions:
                    target.conditions.append(phrase.text)
        for f in primaries:
            out.append(
                Number(
                    raw=text[f.raw_start : f.end].strip(),
                    value=f.value,
                    kind=f.kind,
                    unit=f.unit,
                    comparator=f.comparator,
                    metric=f.metric,
                    per=f.per,
                    conditions=tuple(f.conditions),
                    start=f.raw_start,
                    end=f.end,
                )
            )
    return out


def conditions_of(numbers: list[Number]) -> list[str]:
    """The distinct condition phrases of ``numbers``, in reading order."""
    seen: list[str] = []
    for number in numbers:
        for condition in number.conditions:
            if condition not in seen:
                seen.append(condition)
    return seen
