"""Budget packing: token costs and the draft of one build (what is in, out, left)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from msgspec import Struct, field

from memplug.assemble.models import OVER_BUDGET, REDACTED, VISIBLE, Entry, Omission
from memplug.assemble.render import VisibleText
from memplug.messages import TokenMeter
from memplug.secrets import find_secrets
from memplug.text import estimate_tokens

if TYPE_CHECKING:
    pass


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
    visible: VisibleText | None = None
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
    ) -> bool:
        """Include ``line`` if it fits (opening its section costs the title once)."""
        if self.visible and self.visible.contains(line):
            # The same line of an earlier injection is still in the model's context.
            self.omitted.append(Omission(ref, section, VISIBLE, score, "line already shown"))
            return False
        entry = Entry(ref, section, line, self.meter(line + "\n"), kind, score, why)
        if not self._fits(entry, title):
            self.deferred.append((len(self.omitted), section, title, entry))
            self.omitted.append(
                Omission(ref, section, OVER_BUDGET, score, f"{entry.tokens} tokens")
            )
            return False
        redacted = self._redacted(entry)
        if redacted is not None:
            self.omitted.append(redacted)
            return False
        self._take(entry, title)
        return True

    def top_up(self, extra: int) -> None:
        """Give ``extra`` tokens back and take, in order, the deferred lines that now fit."""
        self.remaining += extra
        changed: dict[int, Omission | None] = {}
        for index, _, title, entry in self.deferred:
            if not self._fits(entry, title):
                continue
            redacted = self._redacted(entry)
            if redacted is None:
                self._take(entry, title)
            changed[index] = redacted
        if changed:
            kept: list[Omission] = []
            for i, omission in enumerate(self.omitted):
                now = changed.get(i, omission)
                if now is not None:
                    kept.append(now)
            self.omitted = kept
        self.deferred = []

    def _fits(self, entry: Entry, title: str) -> bool:
        title_cost = 0 if entry.section in self.opened else self.meter("\n" + title + "\n")
        return entry.tokens + title_cost <= self.remaining

    def _take(self, entry: Entry, title: str) -> None:
        if entry.section not in self.opened:
            self.remaining -= self.meter("\n" + title + "\n")
            self.opened.add(entry.section)
        self.remaining -= entry.tokens
        self.entries.append(entry)

    @staticmethod
    def _redacted(entry: Entry) -> Omission | None:
        # Scanned only once a line would be taken: most candidates never get that far.
        secrets = find_secrets(entry.line)
        if not secrets:
            return None
        kinds = ", ".join(sorted({s.kind for s in secrets}))
        return Omission(entry.ref, entry.section, REDACTED, entry.score, kinds)

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
