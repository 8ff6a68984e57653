"""Structural rules: the typed records of a coding host's transcript that already mark a
durable decision, read before any phrase rule (docs/extraction.md, "Structural rules").

A rule is keyed on a tool's name and its result's shape, never on prose: an answered
``AskUserQuestion``, an approved ``ExitPlanMode`` plan, an edit of a memory file
(``CLAUDE.md``, ``AGENTS.md``, ``.claude/rules/*.md``, ``MEMORY.md``), and the task list
``TodoWrite`` / ``TaskCreate`` / ``TaskUpdate`` keep. :func:`read_record` is pure: the
same call and result give the same candidates.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from typing import Any

from msgspec import Struct
from msgspec.structs import replace

from memplug.base.patterns import lazy
from memplug.base.text import tool_arguments
from memplug.derive.cues.analysis import Candidate, analyse
from memplug.derive.cues.categories import choice_key
from memplug.derive.cues.keys import subject_key
from memplug.derive.cues.words import canonical

ANSWERED = "User has answered your questions:"
APPROVED = "User has approved your plan"
MEMORY_FILES = ("CLAUDE.md", "AGENTS.md", "MEMORY.md", "CLAUDE.local.md")
EDIT_TOOLS = ("Write", "Edit", "MultiEdit")
# One edit of a memory file gives at most this many items: a whole file written at once
# is read line by line, and the lines past this are left for search.
MAX_LINES_PER_EDIT = 24
# A rule line is a sentence, not a heading or a word: this many words at least, and at
# most this many (a pasted paragraph is documentation, not one rule).
MIN_RULE_WORDS = 3
MAX_RULE_WORDS = 60
# A line of a code block is a command when it is this short.
MAX_COMMAND_WORDS = 20
# The words of a question an answer's item keeps: the gist, not the whole preamble.
QUESTION_WORDS = 24
MEMORY_FILE_EVIDENCE = "artifact_verified"


class StructuralRule(Struct, frozen=True):
    """A named, versioned structural rule; ``ref`` is stored in ``extractor``."""

    id: str
    version: int
    kind: str
    summary: str
    tools: tuple[str, ...]

    @property
    def ref(self) -> str:
        return f"{self.id}@{self.version}"


ASK_ANSWER = StructuralRule(
    "structure.ask_answer", 1, "decision",
    "An answered `AskUserQuestion`: one decision per answer, holding the question's gist"
    " and the option the person chose (its label and description) or their own typed"
    " answer. A rejected or interrupted call makes nothing.",
    ("AskUserQuestion",),
)  # fmt: skip
PLAN_APPROVED = StructuralRule(
    "structure.plan_approved", 1, "decision",
    "An `ExitPlanMode` plan the person approved: a decision naming the plan by its title"
    " and what it sets out to do (the first line under Overview, Summary, Goal, Solution"
    " or Approach, else its first line of prose); the plan's whole text is the source"
    " call's (`memory expand`). A later approved plan with the same title supersedes it."
    " A rejected plan makes nothing.",
    ("ExitPlanMode",),
)  # fmt: skip
MEMORY_FILE = StructuralRule(
    "structure.memory_file", 1, "fact",
    "A `Write`/`Edit`/`MultiEdit` of `CLAUDE.md`, `AGENTS.md`, `.claude/rules/*.md` or"
    " `MEMORY.md` that went through: each added rule line becomes a constraint or"
    " preference by the phrase rules' kinds, else a fact; a changed line supersedes the"
    " item made from it and a removed one retracts it. Headings, code and tables are not"
    " rule lines.",
    EDIT_TOOLS,
)  # fmt: skip
REMEMBER = StructuralRule(
    "structure.remember", 1, "fact",
    "An explicit `memory remember` (CLI) or `memory_remember` (MCP): the text as one item,"
    " of the kind it was given, else the phrase rules' kind, else a fact. A later one with"
    " the same subject key (or a choice of the same kind) supersedes it.",
    (),
)  # fmt: skip
TODO_LIST = StructuralRule(
    "structure.todo_list", 2, "task",
    "`TodoWrite` and Codex's `update_plan` (the whole list) and `TaskCreate`/`TaskUpdate`"
    " (one task): the task state's done and open lists, replaced by the list as the agent"
    " last wrote it.",
    ("TodoWrite", "update_plan", "TaskCreate", "TaskUpdate"),
)  # fmt: skip
STRUCTURAL_RULES: tuple[StructuralRule, ...] = (
    ASK_ANSWER, PLAN_APPROVED, MEMORY_FILE, REMEMBER, TODO_LIST)  # fmt: skip
# The source kind of an event `memory remember` captured: read by REMEMBER alone.
REMEMBER_SOURCE = "remember"
REMEMBER_KINDS = ("fact", "decision", "constraint", "preference", "open_question")
STRUCTURAL_BY_ID: dict[str, StructuralRule] = {rule.id: rule for rule in STRUCTURAL_RULES}
STRUCTURAL_TOOLS: frozenset[str] = frozenset(t for rule in STRUCTURAL_RULES for t in rule.tools)

_ANSWER_PAIR = lazy(r'"((?:[^"\\]|\\.)*)"="((?:[^"\\]|\\.)*)"')
_TASK_NUMBER = lazy(r"Task #(\d+)")
# The plan sections that say what it sets out to do.
_GIST_HEADING = lazy(r"\b(?:overview|summary|goal|goals|solution|approach)\b", re.I)
# A heading, or a line that is only a bold label ("**Local development server:**").
_LABEL = lazy(r"^(?:#+\s+(.+)|\*\*([^*]+)\*\*:?)$")


class TodoEntry(Struct, frozen=True):
    """One task of the agent's list, as it last wrote it."""

    key: str
    text: str
    status: str


class TaskChange(Struct, frozen=True):
    """What one task-list record says: the whole list (``TodoWrite``) or one task."""

    entries: tuple[TodoEntry, ...]
    replaces_all: bool


class Reading(Struct, frozen=True):
    """What a record says: items to make (or retract), and a change of the task list."""

    candidates: tuple[Candidate, ...] = ()
    tasks: TaskChange | None = None


NOTHING = Reading()


def is_memory_file(path: str) -> bool:
    """A file the host loads as standing instructions, or its auto-memory."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return name in MEMORY_FILES or ("/.claude/rules/" in path and name.endswith(".md"))


def edited_memory_file(tool_name: str, call_text: str) -> str | None:
    """The memory file an edit tool's call writes, if it writes one."""
    if tool_name not in EDIT_TOOLS:
        return None
    path = (tool_arguments(call_text, tool_name) or {}).get("file_path")
    return path if isinstance(path, str) and is_memory_file(path) else None


def read_record(tool_name: str, call_text: str, result_text: str, outcome: str | None) -> Reading:
    """The items and task change a tool call and its result state; nothing when the call
    was rejected, interrupted or failed."""
    if tool_name not in STRUCTURAL_TOOLS or outcome not in (None, "succeeded"):
        return NOTHING
    args = tool_arguments(call_text, tool_name) or {}
    if tool_name == "AskUserQuestion":
        return Reading(tuple(_answers(args, result_text)))
    if tool_name == "ExitPlanMode":
        found = _plan(args, result_text)
        return Reading((found,)) if found else NOTHING
    if tool_name in EDIT_TOOLS:
        return Reading(tuple(_memory_file(tool_name, args)))
    return Reading(tasks=_tasks(tool_name, args, result_text))


# -- AskUserQuestion ------------------------------------------------------------------------


def _answers(args: Mapping[str, Any], result: str) -> list[Candidate]:
    if not result.startswith(ANSWERED):
        return []
    asked = {
        _unescape(q.get("question", "")): q
        for q in args.get("questions") or ()
        if isinstance(q, dict) and isinstance(q.get("question"), str)
    }
    out = []
    for index, (question, answer) in enumerate(_ANSWER_PAIR.findall(result[len(ANSWERED) :])):
        question, answer = _unescape(question), _unescape(answer)
        if not answer.strip():
            continue
        detail = _option_description(asked.get(question), answer)
        content = f"{_gist(question)} → {answer.strip()}" + (f" ({detail})" if detail else "")
        out.append(_candidate(ASK_ANSWER, content, result, index))
    return out


def _option_description(question: Mapping[str, Any] | None, answer: str) -> str:
    """The chosen option's description, when the answer is one of the offered labels."""
    if not question:
        return ""
    chosen = {part.strip() for part in answer.split(",")}
    return "; ".join(
        str(o.get("description") or "").strip()
        for o in question.get("options") or ()
        if isinstance(o, dict) and str(o.get("label") or "").strip() in chosen
    )


def _gist(question: str) -> str:
    words = question.split()
    return " ".join(words[:QUESTION_WORDS]) + (" …" if len(words) > QUESTION_WORDS else "")


def _unescape(text: str) -> str:
    return text.replace('\\"', '"').replace("\\\\", "\\")


# -- ExitPlanMode -----------------------------------------------------------------------------


def _plan(args: Mapping[str, Any], result: str) -> Candidate | None:
    if not result.startswith(APPROVED):
        return None
    plan = args.get("plan")
    text = plan if isinstance(plan, str) and plan.strip() else ""
    text = text or result.partition("## Approved Plan:")[2]
    title = _plan_title(text)
    if not title:
        return None
    gist = _plan_gist(text, title)
    content = f"Approved plan: {title}" + (f" — {gist}" if gist else "")
    found = _candidate(PLAN_APPROVED, content, text, 0)
    return replace(found, subject_key=f"plan:{canonical(title)}")


def _plan_title(plan: str) -> str:
    """The plan's first heading (``# Plan: X`` gives ``X``), else its first line."""
    lines = [line.strip() for line in plan.splitlines() if line.strip()]
    heading = next((line for line in lines if line.startswith("#")), lines[0] if lines else "")
    title = heading.lstrip("#").strip()
    title = re.sub(r"^(?:implementation\s+)?plan\s*[:\-–—]\s*", "", title, flags=re.I)
    return " ".join(title.split()[:QUESTION_WORDS])


def _plan_gist(plan: str, title: str) -> str:
    """What the plan sets out to do: the first line of prose under a heading that says so
    (Overview, Summary, Goal, Solution, Approach), else its first line of prose."""
    first = ""
    wanted = False
    for raw in plan.splitlines():
        line = raw.strip()
        if line.startswith("#"):
            wanted = bool(_GIST_HEADING.search(line))
            continue
        line = re.sub(r"^(?:[-*+]|\d+[.)])\s+", "", line).strip()
        if not line or line.startswith(("|", "```")) or title in line:
            continue
        if wanted:
            return _gist(line)
        first = first or _gist(line)
    return first


# -- memory files -----------------------------------------------------------------------------


def _memory_file(tool_name: str, args: Mapping[str, Any]) -> list[Candidate]:
    path = args.get("file_path")
    if not isinstance(path, str) or not is_memory_file(path):
        return []
    if tool_name == "Write":
        pairs = [("", str(args.get("content") or ""))]
    elif tool_name == "Edit":
        pairs = [(str(args.get("old_string") or ""), str(args.get("new_string") or ""))]
    else:
        pairs = [
            (str(e.get("old_string") or ""), str(e.get("new_string") or ""))
            for e in args.get("edits") or ()
            if isinstance(e, dict)
        ]
    out: list[Candidate] = []
    for old, new in pairs:
        out.extend(_changed_lines(old, new, len(out)))
    return out[:MAX_LINES_PER_EDIT]


def _changed_lines(old: str, new: str, start: int) -> list[Candidate]:
    """Added lines become items; a replaced line names the item it supersedes, a removed
    one the item it retracts (paired by position inside each changed block)."""
    before, after = _rule_lines(old), _rule_lines(new)
    out: list[Candidate] = []
    matcher = difflib.SequenceMatcher(a=[canonical(x) for x in before],
                                      b=[canonical(x) for x in after], autojunk=False)  # fmt: skip
    opcodes = matcher.get_opcodes()
    if all(tag == "equal" for tag, *_ in opcodes):
        # Only the layout changed: the lines it touched are still the file's rules.
        return [_rule_line(line, start + i, None) for i, line in enumerate(after)]
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            continue
        olds, news = before[i1:i2], after[j1:j2]
        for offset, line in enumerate(news):
            replaced = olds[offset] if offset < len(olds) else None
            out.append(_rule_line(line, start + len(out), replaced))
        for line in olds[len(news) :]:
            out.append(replace(_candidate(MEMORY_FILE, line, line, start + len(out)),
                             kind=None, retraction_target=line))  # fmt: skip
    return out


def _rule_line(line: str, index: int, replaced: str | None) -> Candidate:
    kinds = [c.kind for c in analyse(line, "user", agent=True)]
    kind = next((k for k in kinds if k in ("constraint", "preference")), MEMORY_FILE.kind)
    found = replace(_candidate(MEMORY_FILE, line, line, index), kind=kind)
    if replaced is not None:
        found = replace(found, correction_rule=MEMORY_FILE.ref, correction_target=replaced)
    return found


def _rule_lines(text: str) -> list[str]:
    """The lines of a memory file that state something: list items and sentences without
    their bullet, and each command of a code block under the label it stands under
    (``Local server: `pnpm dev```); not headings, tables, comments or rules alone."""
    out: list[str] = []
    fenced = False
    label = ""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced:
            if line and not line.startswith(("#", "//")) and len(line.split()) <= MAX_COMMAND_WORDS:
                out.append(f"{label}: `{line}`" if label else f"`{line}`")
            continue
        heading = _LABEL.match(line)
        if heading:
            label = (heading.group(1) or heading.group(2)).strip().rstrip(":").strip()
            continue
        if not line or line.startswith(("|", "<!--", ">", "---")):
            continue
        line = re.sub(r"^(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?", "", line).strip()
        if MIN_RULE_WORDS <= len(line.split()) <= MAX_RULE_WORDS:
            out.append(line)
    return out


# -- remember -------------------------------------------------------------------------------


def remembered(text: str, kind: str | None) -> Candidate | None:
    """The one item an explicit ``remember`` makes: ``kind`` when given, else the kind the
    phrase rules read in the text, else a fact."""
    content = " ".join(text.split())
    if not content:
        return None
    if kind not in REMEMBER_KINDS:
        read = [c.kind for c in analyse(content, "user", agent=True) if c.kind in REMEMBER_KINDS]
        kind = read[0] if read else REMEMBER.kind
    key = subject_key(content) or (choice_key(content) if kind == "decision" else None)
    return Candidate(kind, content, REMEMBER.ref, "user", content[:500], 0, subject_key=key)


# -- the task list ----------------------------------------------------------------------------


def _tasks(tool_name: str, args: Mapping[str, Any], result: str) -> TaskChange | None:
    if tool_name in ("TodoWrite", "update_plan"):
        # Codex names a task `step`; Claude Code names it `content`.
        listed = args.get("todos") if tool_name == "TodoWrite" else args.get("plan")
        entries = tuple(
            TodoEntry(str(i), text, str(t.get("status") or ""))
            for i, t in enumerate(listed or ())
            if isinstance(t, dict)
            and (text := str(t.get("content") or t.get("step") or "").strip())
        )
        return TaskChange(entries, replaces_all=True)
    if tool_name == "TaskCreate":
        number = _TASK_NUMBER.search(result)
        subject = str(args.get("subject") or "").strip()
        if number is None or not subject:
            return None
        return TaskChange((TodoEntry(number.group(1), subject, "pending"),), replaces_all=False)
    task_id, status = str(args.get("taskId") or ""), str(args.get("status") or "")
    if not task_id or not status:
        return None
    return TaskChange((TodoEntry(task_id, "", status),), replaces_all=False)


# -- candidates -------------------------------------------------------------------------------


def _candidate(rule: StructuralRule, content: str, sentence: str, index: int) -> Candidate:
    evidence = MEMORY_FILE_EVIDENCE if rule is MEMORY_FILE else None
    return Candidate(rule.kind, content.strip(), rule.ref, "user", sentence[:500], index,
                     evidence=evidence)  # fmt: skip


__all__ = [
    "EDIT_TOOLS",
    "MEMORY_FILE_EVIDENCE",
    "REMEMBER_KINDS",
    "REMEMBER_SOURCE",
    "STRUCTURAL_BY_ID",
    "STRUCTURAL_RULES",
    "STRUCTURAL_TOOLS",
    "Reading",
    "StructuralRule",
    "TaskChange",
    "TodoEntry",
    "edited_memory_file",
    "is_memory_file",
    "read_record",
    "remembered",
]
