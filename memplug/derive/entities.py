"""Entities named by structural signals, and the rules that join their spellings.

Only shapes count — a path, ``host:port``, a URL, ``name==1.2``, an install command, an
identifier in backticks — never what a text seems to be about (see docs/timeline.md
"Entities"). Each entity has an id ``<type>:<key>`` where ``key`` is the normalised
spelling; two spellings are one entity exactly when they normalise to the same key:

* ``file``: relative paths are joined to the session's working directory, ``.`` and
  ``..`` segments resolved, a trailing slash dropped; case is kept (file systems differ,
  so two cases are two files); ``~`` is not expanded (whose home is unknown);
* ``host``: lower case, trailing dot dropped; ``127.0.0.1``, ``::1`` and ``0.0.0.0``
  are the same machine as ``localhost``;
* ``port``: the number without leading zeros, 1–65535 only;
* ``package``: PEP 503 (lower case, runs of ``-``, ``_`` and ``.`` become one ``-``);
  npm scopes (``@scope/name``) are kept;
* ``version``: lower case, a leading ``v`` dropped (``v1.2.0`` is ``1.2.0``);
* ``ident``: exactly as written (identifiers are case-sensitive), ``()`` dropped;
* ``project``: the session's project (the host's project name, else its cwd), trailing
  slash dropped;
* ``subject``: the subject key extraction derived for a key–value statement.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import Any

from msgspec import Struct, field

from memplug.base.patterns import LazyPattern, lazy
from memplug.derive.ahead import served

# Per event: more is listing, not naming (a pasted file list names nothing in particular).
MAX_ENTITIES_PER_EVENT = 24
# Entities of one event linked pairwise by `mentioned_with` (pairs grow quadratically).
MAX_COMENTIONED = 8
RELATIONS: tuple[str, ...] = ("in_project", "mentioned_with", "port", "version", "is")
# Relations that hold one value at a time: a later statement supersedes an earlier one.
FUNCTIONAL_RELATIONS: frozenset[str] = frozenset({"version", "is"})
ENTITY_TYPES: tuple[str, ...] = (
    "project", "file", "host", "port", "package", "version", "ident", "subject", "value",
)  # fmt: skip
# Tool input fields whose value is a path whatever its shape.
PATH_FIELDS: tuple[str, ...] = ("file_path", "path", "notebook_path", "filePath")
# Tool input fields read for other signals; code bodies (`old_string`, `content`) are
# not (an edit names every identifier it touches, which is listing, not naming), nor
# prose (`description`, `prompt`).
SIGNAL_FIELDS: tuple[str, ...] = ("command", "pattern", "query", "url", "glob")
# A bare file name (no slash) counts only with one of these extensions.
FILE_EXTENSIONS: frozenset[str] = frozenset(
    "py pyi js mjs cjs ts tsx jsx json md rst toml yaml yml txt sql sh bash zsh rs go java "
    "kt c h cc cpp hpp rb php css scss html vue lock cfg ini conf env csv ipynb xml proto "
    "tf dockerfile gradle swift".split()
)
_LOOPBACK = frozenset({"127.0.0.1", "::1", "[::1]", "0.0.0.0", "localhost"})

_URL = lazy(
    r"\b[a-z][a-z0-9+.-]*://(?:[^\s/@]+@)?(\[[0-9a-f:]+\]|[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?)"
    r"(?::(\d{1,5}))?[^\s\"'<>)\]]*",
    re.IGNORECASE,
)
_HOST_PORT = lazy(
    r"(?<![\w./@:-])(localhost|\d{1,3}(?:\.\d{1,3}){3}|"
    r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9-]+)*\.[a-z][a-z0-9-]*):(\d{1,5})(?![\w:]|\.\w)",
    re.IGNORECASE,
)
_PORT_WORD = lazy(
    r"(?:\bports?\b\s*(?:is\s+|=\s*|:\s*|to\s+|on\s+)?|--port[= ]|(?<!\S)-p\s+)(\d{1,5})\b",
    re.IGNORECASE,
)
_PATH = lazy(
    r"(?<![\w:/.~@-])((?:~|\.{1,2})?/[\w.@+-]+(?:/[\w.@+-]+)*/?|[\w.@+-]+(?:/[\w.@+-]+)+/?)"
)
_BARE_FILE = lazy(r"(?<![\w/.@-])([\w-]+(?:\.[\w-]+)*\.([A-Za-z]{1,10}))(?![\w/@-])")
_PIN = lazy(
    r"(?<![\w.@/-])(@?[A-Za-z][\w.-]*(?:/[\w.-]+)?)(==|~=|>=|@)v?(\d+(?:\.\d+){0,3}"
    r"(?:[-+.]?[A-Za-z0-9]+)*)(?![\w.])"
)
# An install command where a command starts (not inside a commit message or a quote).
_INSTALL = lazy(
    r"(?:^|&&|\|\||[;|(]|\n)\s*(?:sudo\s+)?(?:python3? -m\s+)?"
    r"(?:pip3?|uv(?: pip)?|poetry|npm|pnpm|yarn|cargo|gem|brew|apt(?:-get)?)\s+"
    r"(?:install|add|i)\s+([^\n;&|()'\"`]+)",
    re.IGNORECASE,
)
# Cheap searches that must succeed for the costlier pattern to find anything (the
# patterns' lookbehinds are tried at every position of a long text).
_HOST_HINT = lazy(r"\w:\d")
_IDENT_HINT = lazy(r"[a-z0-9]_[a-z0-9]|[a-z][A-Z]|[A-Z][a-z0-9]+[A-Z]")
_FILE_HINT = lazy(r"\w\.[A-Za-z]")
_LETTER = lazy(r"[A-Za-z]")
_INSTALL_WORDS = lazy(r"install|\b(?:add|i)\b")
_BACKTICK = lazy(r"`([A-Za-z_][\w.]*(?:\(\))?)`")
_CODE_IDENT = lazy(
    r"(?<![\w.</-])([a-z][a-z0-9]*(?:_[a-z0-9]+)+|[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*"
    r"|[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*)(?![\w-])"
)
_PACKAGE_SEP = lazy(r"[-_.]+")
# `Node.js`, `Vue.js`: a capitalised word and `.js` name a product, not a file.
_PRODUCT = lazy(r"[A-Z][a-z]+\.js")


class Entity(Struct, frozen=True):
    id: str
    type: str
    name: str


class Relation(Struct, frozen=True):
    src: str
    relation: str
    dst: str


class Mentions(Struct):
    """What one text names, in order of first appearance, and how the parts relate."""

    entities: list[Entity] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)

    def add(self, entity: Entity | None) -> Entity | None:
        if entity is None:
            return None
        if all(e.id != entity.id for e in self.entities):
            if len(self.entities) >= MAX_ENTITIES_PER_EVENT:
                return None
            self.entities.append(entity)
        return entity

    def relate(self, src: Entity | None, relation: str, dst: Entity | None) -> None:
        if src is not None and dst is not None and src.id != dst.id:
            rel = Relation(src.id, relation, dst.id)
            if rel not in self.relations:
                self.relations.append(rel)

    def merge(self, other: Mentions) -> None:
        for entity in other.entities:
            self.add(entity)
        for rel in other.relations:
            if rel not in self.relations:
                self.relations.append(rel)

    @property
    def ids(self) -> list[str]:
        return [e.id for e in self.entities]


# -- normalisation -----------------------------------------------------------------------


def project_entity(project: str | None) -> Entity | None:
    key = (project or "").strip()
    key = key.rstrip("/") or key
    return Entity(f"project:{key}", "project", project or "") if key else None


def file_entity(raw: str, cwd: str | None) -> Entity | None:
    path = raw.strip().rstrip(".,;:!?)]}>'\"")
    if not path or path in ("/", "~"):
        return None
    if not path.startswith(("/", "~")) and cwd and cwd.startswith("/"):
        path = posixpath.join(cwd, path)
    keep_home = path.startswith("~")
    path = posixpath.normpath(path)
    if keep_home and not path.startswith("~"):
        return None
    return Entity(f"file:{path}", "file", raw.strip())


def host_entity(raw: str) -> Entity:
    key = raw.lower().rstrip(".")
    if key in _LOOPBACK:
        key = "localhost"
    return Entity(f"host:{key}", "host", raw)


def port_entity(raw: str) -> Entity | None:
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        return None
    return Entity(f"port:{int(raw)}", "port", raw)


def package_entity(raw: str) -> Entity | None:
    name = raw.strip()
    if not name or not re.fullmatch(r"@?[A-Za-z][\w.-]*(?:/[\w.-]+)?", name):
        return None
    if name.startswith("@"):
        scope, _, rest = name.partition("/")
        key = f"{scope.lower()}/{_PACKAGE_SEP.sub('-', rest.lower())}"
    else:
        key = _PACKAGE_SEP.sub("-", name.lower())
    return Entity(f"package:{key}", "package", name)


def version_entity(raw: str) -> Entity:
    key = raw.lower()
    key = key[1:] if key.startswith("v") and key[1:2].isdigit() else key
    return Entity(f"version:{key}", "version", raw)


def ident_entity(raw: str) -> Entity:
    name = raw.removesuffix("()")
    return Entity(f"ident:{name}", "ident", name)


def subject_entity(key: str) -> Entity:
    return Entity(f"subject:{key}", "subject", key)


def value_entity(key: str, value: str) -> Entity | None:
    """The value of a key–value statement when it names no entity of its own: a number
    under a key that names a port is a port; any other number is a plain value."""
    if key.split()[-1:] == ["port"]:
        return port_entity(value)
    return Entity(f"value:{value.lower()}", "value", value) if value else None


def spellings(text: str) -> list[str]:
    """The entity ids ``text`` could name as typed by a person (``Django`` → the package,
    ``8080`` → the port, ``API port`` → the subject), the text itself first."""
    made = [
        package_entity(text),
        host_entity(text) if "." in text or text.lower() in _LOOPBACK else None,
        port_entity(text),
        version_entity(text) if re.match(r"[vV]?\d", text) else None,
        ident_entity(text),
        subject_entity(" ".join(text.lower().split())),
    ]
    return list(dict.fromkeys([text, *(e.id for e in made if e is not None)]))


# -- recognition -------------------------------------------------------------------------


def in_text(text: str, cwd: str | None, *, person: bool = True) -> Mentions:
    """Everything ``text`` names by shape. What a ``person`` typed is also read for
    snake_case and camelCase words; a tool's input for install commands instead (in
    prose, "npm install" is followed by words, not packages)."""
    entities, relations = _scanned(text, cwd, person)
    return Mentions(list(entities), list(relations))


@lru_cache(maxsize=128)
@served
def _scanned(
    text: str, cwd: str | None, person: bool
) -> tuple[tuple[Entity, ...], tuple[Relation, ...]]:
    # Memoised: the timeline and the graph both read a tool call, and a result's call.
    found = Mentions()
    taken = _Taken(len(text))
    lower = text.lower()
    for match in _URL.finditer(text) if "://" in text else ():
        taken.add(match.span())
        host = found.add(host_entity(match.group(1)))
        if match.group(2):
            found.relate(host, "port", found.add(port_entity(match.group(2))))
    hosts = ":" in text and _HOST_HINT.search(text)
    for match in _untaken(_HOST_PORT, text, taken) if hosts else ():
        host = found.add(host_entity(match.group(1)))
        found.relate(host, "port", found.add(port_entity(match.group(2))))
    for match in _PORT_WORD.finditer(text) if "port" in lower or "-p" in text else ():
        found.add(port_entity(match.group(1)))
    _packages(text, found, taken, commands=not person)
    _paths(text, cwd, found, taken)
    for match in _BACKTICK.finditer(text) if "`" in text else ():
        if match.start(1) not in taken and not _looks_like_file(match.group(1)):
            found.add(ident_entity(match.group(1)))
    for match in _CODE_IDENT.finditer(text) if person and _has_code_shape(text) else ():
        if match.start() not in taken:
            found.add(ident_entity(match.group(1)))
    return tuple(found.entities), tuple(found.relations)


def in_tool_input(tool_name: str | None, text: str, cwd: str | None) -> Mentions:
    """What a tool call names: its path fields, then the signals in its other fields.

    Hosts send the call as ``<tool> <JSON arguments>``; a call that is not in that form
    is read as plain text."""
    arguments = _arguments(tool_name, text)
    if arguments is None:
        return in_text(text, cwd, person=False)
    found = Mentions()
    for name in PATH_FIELDS:
        value = arguments.get(name)
        if isinstance(value, str) and value.strip():
            found.add(file_entity(value, cwd))
    for name in SIGNAL_FIELDS:
        value = arguments.get(name)
        if isinstance(value, str):
            found.merge(in_text(value, cwd, person=False))
    return found


def tool_paths(tool_name: str | None, text: str, cwd: str | None) -> list[Entity]:
    """The files a tool call names: its path fields, or the paths in a call that is
    plain text (what "files touched" means)."""
    arguments = _arguments(tool_name, text)
    if arguments is None:
        return [e for e in in_text(text, cwd, person=False).entities if e.type == "file"]
    names = [arguments[n] for n in PATH_FIELDS if isinstance(arguments.get(n), str)]
    files = [file_entity(name, cwd) for name in names]
    return list({f.id: f for f in files if f is not None}.values())


def comentions(entities: Iterable[Entity]) -> list[Relation]:
    """``mentioned_with`` between the first few entities of one event (lower id first)."""
    ids = sorted({e.id for e in list(entities)[:MAX_COMENTIONED] if e.type != "project"})
    return [Relation(a, "mentioned_with", b) for i, a in enumerate(ids) for b in ids[i + 1 :]]


def _arguments(tool_name: str | None, text: str) -> dict[str, Any] | None:
    body = text
    if tool_name and text.startswith(tool_name + " "):
        body = text[len(tool_name) + 1 :]
    if not body.lstrip().startswith("{"):
        return None
    try:
        value = json.loads(body)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _packages(text: str, found: Mentions, taken: _Taken, *, commands: bool) -> None:
    pinned = "==" in text or "~=" in text or ">=" in text or "@" in text
    for match in _untaken(_PIN, text, taken) if pinned else ():
        package = found.add(package_entity(match.group(1)))
        found.relate(package, "version", found.add(version_entity(match.group(3))))
    for match in _INSTALL.finditer(text) if commands and _INSTALL_WORDS.search(text) else ():
        taken.add(match.span(1))
        for word in match.group(1).split():
            if word.startswith("-") or "://" in word or "/" in word.lstrip("@").split("/", 1)[-1]:
                continue
            if _looks_like_file(word):  # `pip install -r requirements.txt`
                continue
            name = re.split(r"[=<>~!@]", word[1:], maxsplit=1)[0] if word.startswith("@") else ""
            name = "@" + name if name else re.split(r"[=<>~!@\[]", word, maxsplit=1)[0]
            found.add(package_entity(name))


def _paths(text: str, cwd: str | None, found: Mentions, taken: _Taken) -> None:
    for match in _PATH.finditer(text) if "/" in text else ():
        raw = match.group(1)
        if match.start() in taken or not _LETTER.search(raw):
            continue
        last = raw.rstrip("/").rsplit("/", 1)[-1]
        prefixed = raw.startswith(("~/", "./", "../")) or (
            raw.startswith("/") and raw.strip("/").count("/") >= 1
        )
        if not prefixed and not _looks_like_file(last):
            continue  # `and/or`, `[/INST]`: a slash alone does not make a path
        taken.add(match.span())
        found.add(file_entity(raw, cwd))
    for match in _BARE_FILE.finditer(text) if "." in text and _FILE_HINT.search(text) else ():
        if _PRODUCT.fullmatch(match.group(1)):
            continue
        if match.start() not in taken and match.group(2).lower() in FILE_EXTENSIONS:
            taken.add(match.span())
            found.add(file_entity(match.group(1), cwd))


def _looks_like_file(name: str) -> bool:
    stem, dot, ext = name.rpartition(".")
    return bool(dot and stem and ext.lower() in FILE_EXTENSIONS)


def _untaken(pattern: LazyPattern, text: str, taken: _Taken) -> Iterator[re.Match[str]]:
    """Matches that start outside every span already read, each taken in turn."""
    for match in pattern.finditer(text):
        if match.start() not in taken:
            taken.add(match.span())
            yield match


def _has_code_shape(text: str) -> bool:
    # An underscore or a capital is needed by every code-word shape; most prose has none
    # past its first letter, and the substring tests run at C speed.
    return ("_" in text or text[1:] != text[1:].lower()) and bool(_IDENT_HINT.search(text))


class _Taken:
    """The characters of a text already read as part of an entity: a later, weaker
    pattern does not read them again (``db:5432`` is a host, not also a path)."""

    def __init__(self, length: int) -> None:
        self._mask = bytearray(length)

    def add(self, span: tuple[int, int]) -> None:
        start, end = span
        self._mask[start:end] = b"\x01" * (end - start)

    def __contains__(self, at: int) -> bool:
        return 0 <= at < len(self._mask) and self._mask[at] == 1
