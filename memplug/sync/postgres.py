"""The shared event log on a PostgreSQL server (team memory, docs/sync.md).

The server keeps events, not derived memory: each machine derives its own items from
them. Three tables: ``memplug_events`` (one row per event key, the redacted generic
JSONL line as ``body``), ``memplug_conflicts`` (a pushed event whose key the server held
with other content, kept apart) and ``memplug_tombstones`` (purges).

Pulls follow a commit-ordered cursor. Each row records the id of the transaction that
wrote it (``xid``, ``pg_current_xact_id()``). A reader takes the horizon
``pg_snapshot_xmin(pg_current_snapshot())``: every transaction with an id below it has
finished, so the rows below the horizon can no longer change or appear. A pull reads
rows ``(xid, id)`` after its cursor and below the horizon, in that order; a row of a
transaction still running is above the horizon and is read by a later pull. A serial
id alone would skip a row whose transaction took its id early and committed late.

Pushes and purges meet under one advisory lock (pushes share it, a purge takes it
alone), so a push can never slip a purged session back in behind the purge.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from msgspec import Struct

from memplug.base.errors import MemplugError, UsageError
from memplug.base.installer import extra_command

# pg_advisory_xact_lock keys: "memp" + 1 for schema changes, + 2 for push vs purge.
_SCHEMA_LOCK = 0x6D656D70_01
_PURGE_LOCK = 0x6D656D70_02

_SCHEMA = """
CREATE TABLE IF NOT EXISTS memplug_events (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    xid          xid8 NOT NULL DEFAULT pg_current_xact_id(),
    session_key  text NOT NULL,
    seq          bigint NOT NULL,
    origin       text NOT NULL,
    project      text,
    event_epoch  double precision,
    content_hash text NOT NULL,
    body         text NOT NULL,
    UNIQUE (session_key, seq)
);
CREATE INDEX IF NOT EXISTS memplug_events_xid ON memplug_events (xid, id);
CREATE TABLE IF NOT EXISTS memplug_conflicts (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_key  text NOT NULL,
    seq          bigint NOT NULL,
    origin       text NOT NULL,
    event_epoch  double precision,
    content_hash text NOT NULL,
    body         text NOT NULL,
    found_at     timestamptz NOT NULL DEFAULT now(),
    UNIQUE (session_key, seq, content_hash)
);
CREATE TABLE IF NOT EXISTS memplug_tombstones (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    xid          xid8 NOT NULL DEFAULT pg_current_xact_id(),
    session_key  text NOT NULL,
    before_epoch double precision,
    origin       text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS memplug_tombstones_xid ON memplug_tombstones (xid, id);
CREATE INDEX IF NOT EXISTS memplug_tombstones_key ON memplug_tombstones (session_key);
"""

# A tombstone covers a session (before_epoch NULL) or its events before a time.
_COVERED = (
    "EXISTS (SELECT 1 FROM memplug_tombstones t WHERE t.session_key = {row}.session_key "
    "AND (t.before_epoch IS NULL OR {row}.event_epoch < t.before_epoch))"
)
_INCOMING = "session_key, seq, origin, project, event_epoch, content_hash, body"

# psycopg logs what it ignores while closing a broken COPY; the error that caused it is
# already the one line memplug prints.
logging.getLogger("psycopg").addHandler(logging.NullHandler())


_NETWORK_DEFAULTS = {
    "connect_timeout": 10,
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 5,
    "keepalives_count": 3,
    "tcp_user_timeout": 30_000,
}


class SyncError(MemplugError):
    """The server is unreachable, refused us, or the connection broke (exit 1)."""


class ServerEvent(Struct, frozen=True):
    """One event as it leaves a machine: its server key and the redacted JSONL line."""

    session_key: str
    seq: int
    origin: str
    project: str | None
    event_epoch: float | None
    content_hash: str
    body: str


class PushResult(Struct):
    pushed: int = 0
    conflicts: int = 0


class PulledEvent(Struct, frozen=True):
    cursor: str
    session_key: str
    seq: int
    origin: str
    content_hash: str
    body: str


class PulledTombstone(Struct, frozen=True):
    cursor: str
    session_key: str
    before_epoch: float | None
    origin: str


def _driver() -> Any:
    """psycopg, or a one-line error naming the extra that installs it."""
    try:
        import psycopg
        import psycopg.conninfo
    except ImportError:
        raise UsageError("sync needs the PostgreSQL driver: " + extra_command("sync")) from None
    return psycopg


def check_url(url: str) -> str:
    """``url`` as a libpq connection string, refused when it holds a password: memplug
    stores the string, and the password belongs in PGPASSWORD, ~/.pgpass or a service
    file."""
    psycopg = _driver()
    try:
        params = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.Error as error:
        raise UsageError(f"not a PostgreSQL connection string: {_first_line(error)}") from None
    if params.get("password"):
        raise UsageError(
            "the URL holds a password; give it in PGPASSWORD, ~/.pgpass or a service file "
            "instead (memplug stores the URL)"
        )
    return url


def _first_line(error: BaseException) -> str:
    text = " ".join(str(error).split("\n")[0].split())
    return text or type(error).__name__


def where(url: str) -> str:
    """``host:port/dbname`` of a connection string, for messages and status."""
    params = _driver().conninfo.conninfo_to_dict(url)
    host = params.get("host") or params.get("hostaddr") or "localhost"
    return f"{host}:{params.get('port') or 5432}/{params.get('dbname') or params.get('user') or ''}"


class Server:
    """One connection to the sync server."""

    def __init__(self, conn: Any, url: str) -> None:
        self.conn = conn
        self.url = url

    @classmethod
    def connect(cls, url: str) -> Server:
        psycopg = _driver()
        given = psycopg.conninfo.conninfo_to_dict(url)
        # A network that drops packets silently fails the sync within about half a
        # minute instead of hanging it; the URL may say otherwise.
        options = {k: v for k, v in _NETWORK_DEFAULTS.items() if k not in given}
        try:
            conn = psycopg.connect(url, autocommit=True, **options)
        except psycopg.Error as error:
            raise SyncError(f"cannot connect to {where(url)}: {_first_line(error)}") from None
        return cls(conn, url)

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def _errors(self) -> Iterator[None]:
        psycopg = _driver()
        try:
            yield
        except psycopg.Error as error:
            raise SyncError(f"the sync server {where(self.url)}: {_first_line(error)}") from None

    def ensure_schema(self) -> None:
        with self._errors(), self.conn.transaction():
            self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            self.conn.execute(_SCHEMA)

    def push(self, events: Sequence[ServerEvent]) -> PushResult:
        """Add events in one transaction; a key the server holds with the same content is
        skipped, with other content it is a conflict (kept apart); a tombstoned key is
        dropped."""
        result = PushResult()
        with self._errors(), self.conn.transaction():
            self.conn.execute("SELECT pg_advisory_xact_lock_shared(%s)", (_PURGE_LOCK,))
            self.conn.execute(
                "CREATE TEMP TABLE memplug_incoming (session_key text, seq bigint, origin text, "
                "project text, event_epoch double precision, content_hash text, body text) "
                "ON COMMIT DROP"
            )
            with self.conn.cursor() as cur:
                with cur.copy(f"COPY memplug_incoming ({_INCOMING}) FROM STDIN") as copy:
                    for e in events:
                        row = (e.session_key, e.seq, e.origin, e.project, e.event_epoch)
                        copy.write_row((*row, e.content_hash, e.body))
                cur.execute(
                    f"INSERT INTO memplug_events ({_INCOMING}) "
                    f"SELECT {_INCOMING} FROM memplug_incoming i "
                    f"WHERE NOT {_COVERED.format(row='i')} ORDER BY session_key, seq "
                    "ON CONFLICT (session_key, seq) DO NOTHING"
                )
                result.pushed = max(cur.rowcount, 0)
                cur.execute(
                    "INSERT INTO memplug_conflicts "
                    "(session_key, seq, origin, event_epoch, content_hash, body) "
                    "SELECT i.session_key, i.seq, i.origin, i.event_epoch, i.content_hash, i.body "
                    "FROM memplug_incoming i JOIN memplug_events e "
                    "ON e.session_key = i.session_key AND e.seq = i.seq "
                    "WHERE e.content_hash <> i.content_hash ON CONFLICT DO NOTHING"
                )
                result.conflicts = max(cur.rowcount, 0)
        return result

    def send_tombstones(self, tombstones: Sequence[tuple[str, float | None]], origin: str) -> int:
        """Record purges and delete what they cover; the number of event rows deleted."""
        deleted = 0
        with self._errors(), self.conn.transaction(), self.conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (_PURGE_LOCK,))
            for key, before in tombstones:
                cur.execute(
                    "INSERT INTO memplug_tombstones (session_key, before_epoch, origin) "
                    "VALUES (%s, %s, %s)",
                    (key, before, origin),
                )
                for table in ("memplug_events", "memplug_conflicts"):
                    cur.execute(
                        f"DELETE FROM {table} WHERE session_key = %s "
                        "AND (%s::double precision IS NULL OR event_epoch < %s)",
                        (key, before, before),
                    )
                    deleted += max(cur.rowcount, 0) if table == "memplug_events" else 0
        return deleted

    def horizon(self) -> str:
        """The transaction id below which every writer has finished."""
        with self._errors():
            row = self.conn.execute("SELECT pg_snapshot_xmin(pg_current_snapshot())::text")
            return str(row.fetchone()[0])

    def pull_events(self, after: str, horizon: str, origin: str, limit: int) -> list[PulledEvent]:
        """Other machines' events after the ``xid:id`` cursor and below the horizon."""
        xid, row_id = after.split(":")
        with self._errors():
            rows = self.conn.execute(
                "SELECT xid::text || ':' || id, session_key, seq, origin, content_hash, body "
                "FROM memplug_events WHERE (xid, id) > (%s::xid8, %s) AND xid < %s::xid8 "
                "AND origin <> %s ORDER BY xid, id LIMIT %s",
                (xid, int(row_id), horizon, origin, limit),
            ).fetchall()
        return [PulledEvent(*row) for row in rows]

    def pull_tombstones(self, after: str, horizon: str) -> list[PulledTombstone]:
        xid, row_id = after.split(":")
        with self._errors():
            rows = self.conn.execute(
                "SELECT xid::text || ':' || id, session_key, before_epoch, origin "
                "FROM memplug_tombstones "
                "WHERE (xid, id) > (%s::xid8, %s) AND xid < %s::xid8 ORDER BY xid, id",
                (xid, int(row_id), horizon),
            ).fetchall()
        return [PulledTombstone(*row) for row in rows]

    def stats(self) -> dict[str, Any]:
        """Rows and bytes on the server (table, indexes and TOAST)."""
        with self._errors():
            row = self.conn.execute(
                "SELECT (SELECT count(*) FROM memplug_events), "
                "pg_total_relation_size('memplug_events'), "
                "(SELECT count(*) FROM memplug_conflicts), "
                "(SELECT count(*) FROM memplug_tombstones)"
            ).fetchone()
        return {"events": row[0], "bytes": row[1], "conflicts": row[2], "tombstones": row[3]}
