"""Query signals from task text: pure functions, no database, no query syntax.

:func:`parse_query` turns whatever a person or a host typed into an ordered tuple of
:class:`Term` (at most :data:`MAX_TERMS`). The store turns those terms into its own
query language (for SQLite, FTS5 MATCH strings: :mod:`memplug.store.fts`).

Signals, in the order they are kept when the cap bites:

1. quoted phrases (``"…"``, ``“…”``, ``「…」``, ``『…』``);
2. exact symbols — numbers (with a unit when one follows), versions, ports, IPs,
   paths and identifiers (``snake_case``, ``camelCase``, ``dotted.name``,
   ``kebab-case``, ``billing2``); the ones that carry a digit *pin* (see
   :attr:`Term.pin`);
3. words of two or more letters, each as the prefix it shares with its Snowball stem;
4. CJK runs (split at particles such as 的/了/是/吗), each run whole and then its
   4-, 3- and 2-character windows, longest first — there is no dictionary, so the
   window that names the subject has to be found by trying them all;
5. stop-words last: kept as signals (a query made only of them still searches) but
   never used for matching while any other term exists.

A term says what it is, not how an index finds it: :attr:`Term.short_word` marks a
word (or ASCII symbol) of under three characters, which only a whole-word match
stands for; how the store looks each term up is the store's business
(``memplug.store.fts.route``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Any

from msgspec import Struct, field

from memplug.base.patterns import lazy
from memplug.base.terms import QuerySignals, Term
from memplug.base.text import cjk_run, may_hold_cjk, normalize_text

MAX_TERMS = 160
# Beyond this many characters the query is cut before parsing: a 10 kB paste must
# not turn into seconds of regex work, and 160 terms are found long before it.
MAX_QUERY_CHARS = 8_000
# A phrase or symbol longer than this is not a useful needle and makes a costly one.
MAX_NEEDLE_CHARS = 200
# A CJK run longer than this is kept only through its windows.
MAX_WHOLE_RUN = 16

# Question words and function words: they carry no subject. "not", "no" and "never"
# are kept on purpose: in a constraint they are the subject.
STOP_WORDS: frozenset[str] = frozenset(
    """
    a about above after again against all also am an and any are aren as at be
    because been before being below between both but by can cannot could couldn did
    didn do does doesn doing don down during each else ever few for from further get
    gets got had hadn has hasn have haven having he her here hers herself him himself
    his how however i if in into is isn it its itself just let like ll may me might
    more most much must mustn my myself nor now of off on once only or other ought our
    ours ourselves out over own re same shall shan she should shouldn so some such
    than that the their theirs them themselves then there these they this those
    through thus to too under until up upon us ve very via was wasn we were weren
    what whatever when whenever where whereas wherever whether which while who whom
    whose why will with within without won would wouldn yet you your yours yourself
    yourselves tell please thing things something anything really okay ok yes
    """.split()
)
# Multi-character Chinese function words and question words, split out of CJK runs.
CJK_STOP_WORDS: tuple[str, ...] = (
    "为什么", "怎么样", "是什么", "什么", "怎么", "怎样", "多少", "哪里", "哪儿", "哪个",
    "哪些", "如何", "是否", "可以", "一下", "一个", "这个", "那个", "这些", "那些",
    "我们", "你们", "他们", "她们", "它们", "请问", "还是", "但是", "因为", "所以",
    "然后", "已经", "现在", "时候", "的话",
)  # fmt: skip
# Single characters that end a CJK word in practice (particles, copula, pronouns).
CJK_STOP_CHARS: frozenset[str] = frozenset(
    "的了吗呢吧啊呀嘛么是在和与及或把被给也都就还又我你他她它请"
)

# English words whose forms no stemmer joins (irregular verbs, plurals): each line's
# forms are one word to ranking, and a query naming one form also looks for the others
# ("where did they meet" finds "we met"). Forms that are mostly another word (rose,
# left as a direction, ground, bore) are left out.
_IRREGULAR_FORMS = """
awake awoke awoken|become became|begin began begun|bend bent|bite bitten|bleed bled|
blow blew blown|break broke broken|bring brought|build built|burn burnt|buy bought|
catch caught|choose chose chosen|come came|creep crept|deal dealt|dig dug|draw drew drawn|
dream dreamt|drink drank drunk|drive drove driven|eat ate eaten|feed fed|feel felt|
fight fought|find found|flee fled|fly flew flown|forget forgot forgotten|
forgive forgave forgiven|freeze froze frozen|give gave given|go went gone|grow grew grown|
hang hung|hear heard|hide hid hidden|hold held|keep kept|kneel knelt|know knew known|
lead led|leap leapt|learn learnt|leave left|lend lent|lose lost|make made|mean meant|
meet met|pay paid|ride rode ridden|ring rang rung|run ran|say said|see saw seen|seek sought|
sell sold|send sent|shake shook shaken|shine shone|shoot shot|show shown|shrink shrank shrunk|
sing sang sung|sink sank sunk|sit sat|sleep slept|slide slid|speak spoke spoken|spend spent|
spin spun|steal stole stolen|stick stuck|sting stung|strike struck|swear swore sworn|
sweep swept|swim swam swum|swing swung|take took taken|teach taught|tell told|think thought|
throw threw thrown|understand understood|wake woke woken|wear wore worn|weep wept|win won|
write wrote written|child children|person people|man men|woman women|mouse mice|foot feet|
tooth teeth
"""
# form -> every form of its word, the base first.
IRREGULAR: dict[str, tuple[str, ...]] = {
    form: tuple(forms)
    for forms in (line.split() for line in _IRREGULAR_FORMS.replace("\n", "").split("|"))
    for form in forms
}
# A needle is never cut shorter than this.
MIN_STEM = 3

_UNITS = (
    r"ms|µs|us|ns|s|sec|secs|seconds?|mins?|minutes?|h|hrs?|hours?|d|days?|weeks?|"
    r"kb|mb|gb|tb|kib|mib|gib|tib|b|bytes?|k|m|rps|qps|tps|px|em|rem|x|%|"
    r"cpus?|cores?|threads?|tokens?|rows?|events?|items?|users?|requests?|ports?"
)
_QUOTED = lazy(r'"([^"\n]{1,400})"|“([^”\n]{1,400})”|「([^」\n]{1,400})」|『([^』\n]{1,400})』')
# Both run in linear time on one long word (a pasted 10 KB token once cost the prompt
# hook ~2 s): a relative path or a URL scheme can only start where its run of word
# characters starts, so the lookbehind rules out every start inside the run, and the
# possessive runs (`++`, `*+`) never give characters back, since what follows each
# (`/`, `:`) is not in the run. They find exactly what the plain patterns found
# (tests/test_query.py compares them).
_PATH = lazy(
    r"(?:[A-Za-z]:)?(?:~|\.{1,2})?(?:/[\w.@+-]++)+/?"
    r"|(?<![\w.@+-])[\w.@+-]++(?:/[\w.@+-]++)+/?",
)
# The scheme is group 1: it starts at its run's first ASCII letter.
_URLISH = lazy(r"(?<![\w+.-])(?:[^\WA-Za-z]|[+.-])*+([A-Za-z][\w+.-]*+://\S+)")
_VERSION = lazy(r"(?<![\w.])[vV]?\d+(?:\.\d+){1,3}(?:[-+][0-9A-Za-z]+(?:\.[0-9A-Za-z]+)*)?(?![\w])")
_PORT = lazy(r"(?<=:)\d{2,5}(?!\d)")
_DIGIT = lazy(r"\d")


@functools.cache
def _number() -> re.Pattern[str]:
    """A number and its unit, compiled at its first use: ignoring case over this many
    alternatives costs a fresh process ~3 ms, and most prompts hold no digit."""
    return re.compile(
        rf"(?<![\w.])(\d+(?:[.,]\d+)?)(%|\s?(?:{_UNITS})(?![^\W\d_]))?", re.IGNORECASE
    )


_IDENT = lazy(
    r"(?<![\w.-])(?:"
    r"[A-Za-z_][A-Za-z0-9]*(?:[_.-][A-Za-z0-9]+)+"  # snake_case, dotted.name, kebab-case
    r"|[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*"  # camelCase
    r"|[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*"  # PascalCase with two humps
    r"|[A-Za-z]+\d[A-Za-z0-9]*"  # billing2, p95, k8s
    r"|\d+[A-Za-z]+\d*[A-Za-z0-9]*"  # 2fa, 3des
    r")(?![\w])",
)
_WORD = lazy(r"[^\W\d_]+")
_SURROGATE = lazy("[\ud800-\udfff]")
_CJK_STOP_SPLIT = lazy(
    "|".join(sorted(CJK_STOP_WORDS, key=len, reverse=True))
    + "|["
    + "".join(sorted(CJK_STOP_CHARS))
    + "]"
)


def scrub_surrogates(text: str) -> str:
    """Undecodable argv bytes arrive as lone surrogates, which neither SQLite nor
    UTF-8 can take: each becomes U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)


def word_stem(word: str) -> str:
    """The Snowball (Porter 2) English stem of a lower-case word, an irregular form's
    being its base word's: the spellings of one word share it (``paints``, ``painted``,
    ``painting`` → ``paint``; ``stories`` → ``stori``; ``met`` → ``meet``), while words
    that only begin alike do not (``cheer`` and ``check``, ``face`` and ``fact``)."""
    forms = IRREGULAR.get(word)
    return _snowball(forms[0] if forms else word)


def _snowball(word: str) -> str:
    return _stemmer().stemWord(word)


@functools.cache
def _stemmer() -> Any:
    # A C extension (pystemmer), loaded on the first word that needs it.
    import Stemmer

    return Stemmer.Stemmer("english")


def stem(word: str) -> str:
    """A word's needle: the prefix it shares with its Snowball stem, so the trigram
    index finds every spelling (``painted`` → ``paint`` finds ``painting``).

    A stem ending in ``i`` stands for a ``y`` as well (``stories`` → ``stori``): the
    needle stops before the ``i`` so that ``story`` is found too, unless that leaves
    three letters (``redis`` stays ``redi``, not ``red``). A needle over-reaches
    (``paint`` is in ``painter``); ranking checks each match's own stem
    (:func:`word_stem`) and counts a prefix-only match at ``retrieval.prefixMatchWeight``.
    """
    if not word.isascii() or len(word) <= MIN_STEM:
        return word
    key = _snowball(word)
    shared = 0
    while shared < min(len(word), len(key)) and word[shared] == key[shared]:
        shared += 1
    if key.endswith("i") and shared == len(key) and shared > MIN_STEM + 1:
        shared -= 1
    if shared >= MIN_STEM:
        return word[:shared]
    return key if len(key) >= MIN_STEM else word


def is_numeric_symbol(text: str) -> bool:
    """A symbol that carries a digit, or a ``v``-prefixed version: these pin."""
    if len(text) < 2:
        return False
    return any(ch.isdigit() for ch in text)


def cjk_windows(run: str) -> list[str]:
    """The run itself (when short enough), then its 4-, 3- and 2-character windows."""
    out: list[str] = []
    seen: set[str] = set()
    widths = [len(run)] if len(run) <= MAX_WHOLE_RUN else []
    widths += [w for w in (4, 3, 2) if w < len(run)]
    for width in widths:
        for start in range(0, len(run) - width + 1):
            window = run[start : start + width]
            if window not in seen:
                seen.add(window)
                out.append(window)
    return out


def _cjk_subruns(run: str) -> list[str]:
    return [part for part in _CJK_STOP_SPLIT.split(run) if len(part) >= 2]


class _Collector(Struct):
    max_terms: int
    terms: list[Term] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    capped: bool = False
    next_group: int = 0

    def add(self, term: Term) -> bool:
        if not term.text.strip() or term.text in self.seen:
            return False
        if len(self.terms) >= self.max_terms:
            self.capped = True
            return False
        self.seen.add(term.text)
        self.terms.append(term)
        return True

    def group(self) -> int:
        self.next_group += 1
        return self.next_group


def _clean_symbol(raw: str) -> str:
    return raw.rstrip(".,;:!?)]}>'\"").lower()


def _symbols(text: str) -> list[tuple[int, str]]:
    """Exact symbols with their offsets; overlapping spellings are all kept."""
    found: list[tuple[int, str]] = []
    for match in _URLISH.finditer(text):
        found.append((match.start(1), _clean_symbol(match.group(1))))
    for match in _PATH.finditer(text):
        value = _clean_symbol(match.group(0))
        if "/" in value.strip("/") or value.startswith(("/", "~/", "./", "../")):
            found.append((match.start(), value))
    for match in _VERSION.finditer(text):
        found.append((match.start(), match.group(0).lower()))
    for match in _PORT.finditer(text):
        found.append((match.start(), match.group(0)))
    for match in _number().finditer(text) if _DIGIT.search(text) else ():
        number, unit = match.group(1), (match.group(2) or "").strip().lower()
        if unit == "%":
            found.append((match.start(), number + "%"))
        elif len(number) >= 2:
            found.append((match.start(), number))
    for match in _IDENT.finditer(text):
        found.append((match.start(), _clean_symbol(match.group(0))))
    return sorted(
        ((at, s) for at, s in found if 2 <= len(s) <= MAX_NEEDLE_CHARS), key=lambda p: p[0]
    )


def parse_query(text: str, *, mode: str = "literal", max_terms: int = MAX_TERMS) -> QuerySignals:
    """Turn task or query text into ordered, de-duplicated terms. Never raises on text.

    ``mode="phrase"`` keeps the whole text as one contiguous needle; ``"regex"`` keeps
    the pattern as given (matching happens elsewhere); anything else is ``literal``.
    """
    raw = scrub_surrogates(normalize_text(str(text or "")))
    capped = len(raw) > MAX_QUERY_CHARS
    raw = raw[:MAX_QUERY_CHARS]
    if mode == "regex":
        return QuerySignals(text=raw, terms=(), capped=capped, mode="regex")
    if mode == "phrase":
        phrase = " ".join(raw.lower().split())[:MAX_NEEDLE_CHARS]
        terms = (Term(phrase, "phrase", phrase, group=1),) if phrase else ()
        return QuerySignals(
            text=raw, terms=terms, capped=capped or len(raw) > MAX_NEEDLE_CHARS, mode="phrase"
        )

    out = _Collector(max_terms=max_terms, capped=capped)
    for match in _QUOTED.finditer(raw):
        body = next(g for g in match.groups() if g is not None)
        phrase = " ".join(body.lower().split())[:MAX_NEEDLE_CHARS]
        if len(phrase) >= 2:
            out.add(Term(phrase, "phrase", phrase, group=out.group()))

    symbols = _symbols(raw)
    unique = list(dict.fromkeys(symbol for _, symbol in symbols))
    parents: dict[str, int] = {}
    for pinned in (True, False):
        for symbol in unique:
            if is_numeric_symbol(symbol) != pinned:
                continue
            # `tenant.py` inside `src/index/tenant.py` scores as part of the path (a
            # partial match) but is not looked up on its own: the path is the rarer
            # needle, and the file name alone could match thousands of events.
            outer = next((o for o in unique if len(o) > len(symbol) and symbol in o), None)
            if not pinned and outer is not None and outer in parents:
                out.add(Term(symbol, "symbol", symbol, window=True, group=parents[outer]))
                continue
            group = out.group()
            if out.add(Term(symbol, "symbol", symbol, pin=pinned, group=group)):
                parents[symbol] = group

    # Words and CJK runs in the order they appear, so a long query keeps its start.
    stops: list[Term] = []
    windows: list[Term] = []
    for letters in _WORD.finditer(raw):
        for part in _split_scripts(letters.group(0)):
            if may_hold_cjk(part) and cjk_run().fullmatch(part):
                for run in _cjk_subruns(part):
                    group = out.group()
                    all_windows = cjk_windows(run)
                    head = all_windows[0]
                    out.add(Term(head, "cjk", run, group=group))
                    windows.extend(
                        Term(w, "cjk", run, window=True, group=group) for w in all_windows[1:]
                    )
                continue
            word = part.lower()
            if len(word) < 2:
                continue
            if word in STOP_WORDS:
                stops.append(Term(word, "word", word, stop=True, group=out.group()))
                continue
            group = out.group()
            forms = [f for f in IRREGULAR.get(word, ()) if f != word and f not in STOP_WORDS]
            for form in (word, *forms):
                out.add(Term(stem(form), "word", form, group=group))
    for term in windows:
        out.add(term)
    for term in stops:
        out.add(term)
    return QuerySignals(text=raw, terms=tuple(out.terms), capped=out.capped, mode="literal")


def _split_scripts(chunk: str) -> Iterable[str]:
    """Split a letter run where CJK and non-CJK scripts meet (``billing服务``)."""
    if not may_hold_cjk(chunk):
        if chunk:
            yield chunk
        return
    last = 0
    for match in cjk_run().finditer(chunk):
        if match.start() > last:
            yield chunk[last : match.start()]
        yield match.group(0)
        last = match.end()
    if last < len(chunk):
        yield chunk[last:]
