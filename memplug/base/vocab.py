"""The fixed vocabularies every layer agrees on (event types, kinds, statuses, sources)."""

from __future__ import annotations

from typing import Literal, get_args

# Each vocabulary a pydantic model validates against is written once, as the Literal
# that mypy and pydantic read, and the tuple every other layer reads is derived from it.
EventType = Literal[
    "user/message",
    "assistant/message",
    "assistant/thinking",
    "tool/call",
    "tool/result",
    "compaction/start",
    "compaction/end",
    "compaction/summary",
    "compaction/prune",
    "session/start",
    "session/end",
    "command",
]
Role = Literal["user", "assistant", "tool", "system", "command"]
Outcome = Literal["succeeded", "failed", "aborted", "timed_out"]

EVENT_TYPES: tuple[str, ...] = get_args(EventType)
COMPACTION_TYPES: frozenset[str] = frozenset(t for t in EVENT_TYPES if t.startswith("compaction/"))
ROLES: tuple[str, ...] = get_args(Role)
OUTCOMES: tuple[str, ...] = get_args(Outcome)

MEMORY_KINDS: tuple[str, ...] = (
    "fact",
    "decision",
    "constraint",
    "preference",
    "proposal",
    "open_question",
)
EVIDENCE_TYPES: tuple[str, ...] = (
    "user_explicit",
    "assistant_proposal",
    "skill",
    "artifact_verified",
    "inferred",
)
ITEM_STATUSES: tuple[str, ...] = ("active", "superseded", "disputed", "retracted")
LIFECYCLE_EVENTS: tuple[str, ...] = (
    "created",
    "revised",
    "superseded",
    "retracted",
    "disputed",
    "reactivated",
    "promoted",
)

# Source kinds of text that a harness or plugin generated rather than a person typed.
# Such events are stored (the log must agree with the host's) but never extracted from
# and never quoted back as evidence.
GENERATED_SOURCE_KINDS: frozenset[str] = frozenset(
    {
        "memplug",
        "runtime-context",
        "agent-instructions",
        "skill-invocation",
        "time-context",
        "compaction-checkpoint",
        "compact-checkpoint",
        "plan-mode",
        "host-generated",
    }
)
# How a harness marks text it put in a user-role record rather than a person typed it:
# a user message that begins with one of these is generated, whatever its source says.
# Each marker names the form a host adapter records for it.
GENERATED_TEXT_MARKERS: tuple[tuple[str, str], ...] = (
    ("<system-reminder>", "system-reminder"),
    ("<task-notification>", "task-notification"),
    ("<command-name>", "slash-command"),
    ("<command-message>", "slash-command"),
    ("<local-command-caveat>", "caveat"),
    ("Caveat: The messages below were generated", "caveat"),
    ("<local-command-stdout>", "command-output"),
    ("<local-command-stderr>", "command-output"),
    ("<bash-stdout>", "command-output"),
    ("<bash-stderr>", "command-output"),
    ("<user-prompt-submit-hook>", "hook-output"),
    ("[Request interrupted by user", "interrupt"),
)
GENERATED_TEXT_PREFIXES: tuple[str, ...] = tuple(marker for marker, _ in GENERATED_TEXT_MARKERS)
# Source kinds that mark text a person actually typed.
USER_INPUT_SOURCE_KINDS: frozenset[str] = frozenset({"user", "input", "prompt", "steer"})

# What memplug stamps on its own injected message.
MEMPLUG_SOURCE_KIND = "memplug"
MEMPLUG_SOURCE_FORM = "evidence"
# The source form of a compaction summary, in every host: what the context kept of the
# work before it (a visible message of this form is what the message must not repeat).
COMPACT_SUMMARY_FORM = "compact-summary"

# Timeline entry kinds (docs/timeline.md); `decision` and `constraint` are items' kinds.
TIMELINE_KINDS: tuple[str, ...] = (
    "session_started",
    "session_ended",
    "decision",
    "constraint",
    "tool_failed",
    "tool_succeeded",
    "compaction",
    "file_touched",
)

# The subject key of a decision that picks one thing of a kind (cues.categories):
# ``choice:<kind>``, or ``choice:<kind>@<what it is for>`` when it says.
CHOICE_PREFIX = "choice:"


def choice_keys_agree(a: str, b: str) -> bool:
    """Two choice keys name the same choice: the same kind, and the same purpose unless
    one of them names none ("use MySQL 8 instead" replaces "PostgreSQL for orders";
    "vitest for the frontend" leaves "pytest for the backend" standing)."""
    if not (a.startswith(CHOICE_PREFIX) and b.startswith(CHOICE_PREFIX)):
        return False
    kind_a, _, for_a = a.partition("@")
    kind_b, _, for_b = b.partition("@")
    return kind_a == kind_b and (not for_a or not for_b or for_a == for_b)
