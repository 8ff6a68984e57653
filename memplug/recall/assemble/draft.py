"""Budget packing: token costs and the draft of one build (what is in, out, left)."""

from __future__ import annotations

import re

from msgspec import Struct, field
from msgspec.structs import replace

from memplug.base.messages import TokenMeter
from memplug.base.redaction import withhold
from memplug.base.text import estimate_tokens
from memplug.recall.assemble.models import (
    ALREADY_INJECTED,
    IN_CORE,
    OVER_BUDGET,
    RECENT,
    REDACTED,
    VISIBLE,
    Entry,
    Omission,
)
from memplug.recall.assemble.relevance import CARRIED
from memplug.recall.assemble.render import Injected, VisibleText

# Sections whose lines name one source each: cited once, they are not quoted again.
_BY_REF = frozenset({"memory", "evidence", "index", "work"})

# Labels (`[ev s1:4]`) and markers (`[redacted:password]`): a line that holds nothing
# else once its secrets are withheld is not worth quoting.
_LABELS = re.compile(r"\[[^\]\n]*\]")
_MEANING = re.compile(r"[^\W_]")


class Meter:
    """Token costs: the host's meter when it has one (``exact``), else the estimate."""

    def __init__(self, meter: TokenMeter | None) -> None:
        self._meter = meter
        self.source = "exact" if meter is not None else "estimate"
        self.errors: list[str] = []

    def __call__(self, text: str) -> int:
        if self._meter is not None:
            try:
                return max(0, int(self._meter(text)))
            except Exception as error:
                # A broken meter must not cost the step its memory: fall back, say so.
                self.errors.append(f"token meter failed ({type(error).__name__}: {error})")
                self._meter = None
                self.source = "estimate"
        return estimate_tokens(text)


class Draft(Struct):
    """The state of one build: what is in, what is out, what is left."""

    budget: int
    meter: Meter
    remaining: int = 0
    entries: list[Entry] = field(default_factory=list)
    omitted: list[Omission] = field(default_factory=list)
    opened: set[str] = field(default_factory=set)
    # Group headings already paid for, per section (raw evidence: one per session and
    # day; the index: one per session).
    groups: set[tuple[str, str]] = field(default_factory=set)
    visible: VisibleText | None = None
    # memplug's own earlier injections still in the context (none: nothing said yet).
    injected: Injected | None = None
    # Lines left out for the budget alone, in offer order: a top-up may still take them.
    deferred: list[tuple[int, str, str, Entry]] = field(default_factory=list)

    def offer(
        self,
        section: str,
        title: str,
        ref: str,
        line: str,
        *,
        kind: str | None = None,
        score: float | None = None,
        why: str = "",
        group: str | None = None,
        position: int = 0,
    ) -> bool:
        """Include ``line`` if it fits (opening its section costs the title once, and
        opening its group, its heading once), with any secret in it withheld."""
        if self.injected and self.injected.said(ref, line, by_ref=section in _BY_REF):
            self.omitted.append(
                Omission(ref, section, ALREADY_INJECTED, score, "since the latest compaction")
            )
            return False
        if self.visible and self._shown(line, group):
            # The same line of an earlier injection is still in the model's context.
            self.omitted.append(Omission(ref, section, VISIBLE, score, "line already shown"))
            return False
        tokens = self.meter(line + "\n")
        entry = Entry(ref, section, line, tokens, kind, score, why, group, position)
        if not self._fits(entry, title):
            return self._defer(entry, title)
        withheld = self._withheld(entry)
        if isinstance(withheld, Omission):
            self.omitted.append(withheld)
            return False
        if withheld is not entry:
            return self._offer_withheld(withheld, title)
        self._take(entry, title)
        return True

    def _offer_withheld(self, entry: Entry, title: str) -> bool:
        """A line with its secrets withheld: shown already, or no longer fitting (a marker
        can cost more than the value), it is left out like any other line."""
        if self.visible and self._shown(entry.line, entry.group):
            self.omitted.append(
                Omission(entry.ref, entry.section, VISIBLE, entry.score, "line already shown")
            )
            return False
        if not self._fits(entry, title):
            return self._defer(entry, title)
        self._take(entry, title)
        return True

    def _defer(self, entry: Entry, title: str) -> bool:
        """Leave ``entry`` out for the budget alone: a top-up may still take it."""
        self.deferred.append((len(self.omitted), entry.section, title, entry))
        self.omitted.append(
            Omission(entry.ref, entry.section, OVER_BUDGET, entry.score, f"{entry.tokens} tokens")
        )
        return False

    def top_up(self, extra: int) -> None:
        """Give ``extra`` tokens back and take, in order, the deferred lines that now fit."""
        self.remaining += extra
        changed: dict[int, Omission | None] = {}
        for index, _, title, entry in self.deferred:
            if not self._fits(entry, title):
                continue
            withheld = self._withheld(entry)
            if isinstance(withheld, Omission):
                changed[index] = withheld
            elif self._fits(withheld, title):
                self._take(withheld, title)
                changed[index] = None
        if changed:
            kept: list[Omission] = []
            for i, omission in enumerate(self.omitted):
                now = changed.get(i, omission)
                if now is not None:
                    kept.append(now)
            self.omitted = kept
        self.deferred = []

    def _shown(self, line: str, group: str | None) -> bool:
        """The line, under its heading, is in an earlier injection still in context."""
        assert self.visible is not None
        return self.visible.contains(line) and (group is None or self.visible.contains(group))

    def _opening(self, entry: Entry, title: str) -> int:
        """What the section title and the group heading cost, if ``entry`` opens them."""
        cost = 0 if entry.section in self.opened else self.meter("\n" + title + "\n")
        if entry.group is not None and (entry.section, entry.group) not in self.groups:
            cost += self.meter(entry.group + "\n")
        return cost

    def _fits(self, entry: Entry, title: str) -> bool:
        return entry.tokens + self._opening(entry, title) <= self.remaining

    def _take(self, entry: Entry, title: str) -> None:
        self.remaining -= entry.tokens + self._opening(entry, title)
        self.opened.add(entry.section)
        if entry.group is not None:
            self.groups.add((entry.section, entry.group))
        self.entries.append(entry)

    def _withheld(self, entry: Entry) -> Entry | Omission:
        """``entry`` itself when its line holds no secret; else the line with each secret
        replaced by a marker naming its kind (re-metered, the kinds in its ``why``), or an
        omission ``redacted`` when nothing but the secret and its label would be left."""
        # Scanned only once a line would be taken: most candidates never get that far.
        line, kinds = withhold(entry.line)
        if not kinds:
            return entry
        if not _MEANING.search(_LABELS.sub("", line)):
            return Omission(entry.ref, entry.section, REDACTED, entry.score, ", ".join(kinds))
        why = f"{entry.why} withheld:{','.join(kinds)}".strip()
        return replace(entry, line=line, tokens=self.meter(line + "\n"), why=why)

    def answered(self) -> bool:
        """Something in memory answers the step's request: a memory item, raw evidence or
        a work record it names is in the message — or left out only because the model
        already sees it, the budget had no room, the core shows it or its item says it."""
        if any(
            e.section in ("memory", "evidence", "index")
            or (e.section == "work" and e.kind != RECENT)
            for e in self.entries
        ):
            return True
        return any(
            o.reason in (VISIBLE, OVER_BUDGET, IN_CORE, CARRIED)
            and o.section in ("memory", "evidence", "work")
            for o in self.omitted
        )

    def omit(
        self, ref: str, section: str, reason: str, score: float | None = None, detail: str = ""
    ) -> None:
        self.omitted.append(Omission(ref, section, reason, score, detail or None))


class Packed(Struct):
    budget: int
    meter: Meter
    draft: Draft
    mandatory: list[Entry]
    answered: bool
    errors: list[str]
    # Tokens set aside for the insufficient-evidence statement (and its section title
    # when nothing else needed it), given back when something answered the query.
    reserve: int = 0
    # The message's first line(s): the full header, or the short one that refers to it.
    header: str = ""
