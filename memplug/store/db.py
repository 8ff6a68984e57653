"""The apsw connection, set up on purpose, and the migrations runner.

This module and ``memplug.store`` are the only places that talk to SQLite, and the
only ones that see apsw's types: an engine error leaves them as a ``DatabaseError``
(:func:`translate_error` is the one place that maps them).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import apsw
from msgspec import Struct

from memplug.base.clock import utc_now
from memplug.base.errors import (
    DatabaseBusy,
    DatabaseError,
    DatabaseMissing,
    DatabaseReadOnly,
    SchemaTooNew,
    UsageError,
)

# How long a writer waits for another one's lock before giving up: the one default
# for every connection (callers that must not stall wait less, through ``lock_wait``).
BUSY_TIMEOUT_MS = 5000
_MIGRATION_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


class Migration(Struct, frozen=True):
    version: int
    name: str
    sql: str


def _migrations_dir() -> Path:
    """Migrations ship in the wheel as ``memplug/migrations``; a checkout has them at top level."""
    # Plain paths, not importlib.resources: a hook process pays for every import.
    packaged = Path(__file__).resolve().parent.parent / "migrations"
    if packaged.is_dir():
        return packaged
    return packaged.parent.parent / "migrations"


def load_migrations(directory: Path | None = None) -> list[Migration]:
    """Read numbered SQL files in order; a duplicate or malformed number is an error."""
    directory = directory or _migrations_dir()
    found: dict[int, Migration] = {}
    for path in sorted(directory.glob("*.sql")):
        match = _MIGRATION_NAME.match(path.name)
        if not match:
            raise DatabaseError(f"migration file {path.name} is not named NNNN_name.sql")
        version = int(match.group(1))
        if version in found:
            raise DatabaseError(
                f"two migrations share number {version:04d}: {found[version].name} and {path.name}"
            )
        found[version] = Migration(version, path.name, path.read_text(encoding="utf-8"))
    migrations = [found[v] for v in sorted(found)]
    expected = list(range(1, len(migrations) + 1))
    if [m.version for m in migrations] != expected:
        raise DatabaseError("migration numbers must run 0001, 0002, … with no gap")
    return migrations


def code_schema_version() -> int:
    return len(load_migrations())


def _run_script(conn: apsw.Connection, sql: str) -> None:
    # apsw runs later statements of a script only as the cursor is consumed.
    for _ in conn.execute(sql):
        pass


def _ensure_private_file(path: Path) -> None:
    """Create the directory 0700 and the file 0600 before SQLite touches them."""
    directory = path.parent
    if not directory.exists():
        directory.mkdir(parents=True, mode=0o700, exist_ok=True)
        os.chmod(directory, 0o700)
    if not path.exists():
        fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o600)
        os.close(fd)
        os.chmod(path, 0o600)


def _configure(conn: apsw.Connection, readonly: bool) -> None:
    conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    # Double-quoted strings are identifiers only (apsw.bestpractice.connection_dqs, set
    # here directly: that module's imports cost a hook process ~10 ms). This connection
    # only, not process-wide: a host may use SQLite for its own ends.
    conn.config(apsw.SQLITE_DBCONFIG_DQS_DML, 0)
    conn.config(apsw.SQLITE_DBCONFIG_DQS_DDL, 0)
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA recursive_triggers = ON")
    # Reads through a memory map skip a copy per page: the FTS and candidate reads of
    # one retrieval touch thousands of pages (measured ~20% of pre_step at 100k events).
    conn.execute("PRAGMA mmap_size = 268435456")
    if not readonly:
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()
        if mode is None or str(mode[0]).lower() != "wal":
            raise DatabaseError("could not switch the database to WAL mode")
        conn.execute("PRAGMA synchronous = NORMAL")
        # Deleted rows (purge, log retention, superseded cells) are zeroed rather than
        # left readable in free space; measured at no cost on a 60k-event import.
        conn.execute("PRAGMA secure_delete = ON")


# The page cache of a connection doing a bulk import, in KiB (SQLite's negative form).
BULK_CACHE_KIB = 65_536
# SQLite's default: a commit checkpoints once the WAL holds this many pages.
WAL_AUTOCHECKPOINT = 1_000
# How often the bulk checkpointer copies what the writer committed meanwhile.
CHECKPOINT_EVERY_S = 0.2
CHECKPOINT_THREAD = "memplug-checkpoint"


class _Checkpointer:
    """PASSIVE checkpoints of ``path`` from a connection of its own, on a thread: they
    never block the writer, and a failed one loses nothing (the WAL keeps the pages
    until a later checkpoint copies them)."""

    def __init__(self, path: Path) -> None:
        self._done = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(path,), name=CHECKPOINT_THREAD, daemon=True
        )
        self._thread.start()

    def _run(self, path: Path) -> None:
        try:
            conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READWRITE)
        except apsw.Error:
            return
        try:
            while not self._done.wait(CHECKPOINT_EVERY_S):
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except apsw.Error:
            pass  # the writer's own checkpoint at the end copies what is left
        finally:
            conn.close()

    def stop(self) -> None:
        self._done.set()
        self._thread.join()


def translate_error(error: apsw.Error, path: Path) -> DatabaseError:
    """The memplug error, written for people, for an engine error on ``path``."""
    if isinstance(error, apsw.BusyError):
        return DatabaseBusy(f"the database {path} is locked by another writer; try again")
    if isinstance(error, apsw.CorruptError | apsw.NotADBError):
        return DatabaseError(f"the database {path} is corrupt or not a memplug database")
    if isinstance(error, apsw.ReadOnlyError):
        return _read_only(path)
    if isinstance(error, apsw.FullError):
        return DatabaseError(f"the database {path} is full (disk or page limit reached)")
    if isinstance(error, apsw.CantOpenError):
        return DatabaseError(f"cannot open the database {path}")
    return DatabaseError(f"database error on {path}: {error}")


def _read_only(path: Path) -> DatabaseReadOnly:
    return DatabaseReadOnly(
        f"the database {path} is read-only: reading commands work, this one writes"
    )


def engine_error(error: BaseException, path: Path) -> DatabaseError | None:
    """:func:`translate_error` for an engine error that escaped a store; else None."""
    return translate_error(error, path) if isinstance(error, apsw.Error) else None


def _connect_reading(path: Path) -> apsw.Connection:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        _configure(conn, readonly=True)
        # The first read is where a WAL database without a writable directory fails.
        conn.execute("SELECT count(*) FROM sqlite_schema").fetchall()
        return conn
    except (apsw.CantOpenError, apsw.ReadOnlyError):
        conn.close()

        uri = f"file:{quote(str(path))}?immutable=1"
        conn = apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
        _configure(conn, readonly=True)
        return conn


class Database:
    """An open memplug database: one apsw connection, migrated to the code's schema."""

    def __init__(self, conn: apsw.Connection, path: Path, *, readonly: bool = False) -> None:
        self.conn = conn
        self.path = path
        self.readonly = readonly
        self._checkpointer: _Checkpointer | None = None

    @classmethod
    def open(
        cls,
        path: Path | str,
        *,
        create: bool = True,
        readonly: bool = False,
        migrations: list[Migration] | None = None,
    ) -> Database:
        """Open ``path``; with ``create`` make it (0600, in a 0700 directory) when absent.

        Reading commands pass ``create=False``: a missing file is then an error and
        nothing is created on disk, not even the directory.
        """
        path = Path(path).expanduser()
        if not path.exists():
            if not create:
                raise DatabaseMissing(f"no memplug database at {path}")
            _ensure_private_file(path)
        elif not create and path.stat().st_size == 0:
            # An empty file holds no database: only a capturing command makes one there.
            raise DatabaseMissing(
                f"no memplug database at {path} (the file is empty; a writing command such as "
                "`memory import` makes one)"
            )
        if readonly:
            return cls._open_reading(path, migrations)
        try:
            db = cls(apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READWRITE), path)
            db.set_up(migrations)
        except (apsw.CantOpenError, apsw.ReadOnlyError):
            # SQLite says "cannot open" when only the directory (the WAL's files) is
            # read-only; a file this process can read is a read-only database.
            if os.access(path, os.R_OK):
                raise _read_only(path) from None
            raise DatabaseError(f"cannot open the database {path}") from None
        except apsw.Error as error:
            raise translate_error(error, path) from None
        return db

    def set_up(self, migrations: list[Migration] | None) -> None:
        """Configure a writing connection and migrate; closed again if either fails."""
        try:
            # Before anything is written (WAL mode, a migration): a newer file is left
            # exactly as it was, byte for byte. The read waits like any other for a
            # process that is switching a brand-new file to WAL.
            self.conn.set_busy_timeout(BUSY_TIMEOUT_MS)
            migrations = load_migrations() if migrations is None else migrations  # read once
            self.refuse_newer(migrations)
            _configure(self.conn, readonly=False)
            self.migrate(migrations=migrations)
        except BaseException:
            self.conn.close()
            raise

    @classmethod
    def _open_reading(cls, path: Path, migrations: list[Migration] | None) -> Database:
        """A read-only connection. A database from an older memplug is upgraded first
        when the file can be written; a snapshot whose directory cannot hold the WAL's
        shared-memory file is read as immutable (nobody can be writing it there)."""
        try:
            conn = _connect_reading(path)
            db = cls(conn, path, readonly=True)
            if db.pending_migrations(migrations):
                db.close()
                cls.open(path, create=False, migrations=migrations).close()
                db = cls(_connect_reading(path), path, readonly=True)
            db.migrate(readonly=True, migrations=migrations)
        except apsw.Error as error:
            raise translate_error(error, path) from None
        return db

    # -- transactions ---------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[apsw.Connection]:
        """A transaction; nested calls become savepoints (apsw's ``with conn``)."""
        with self.conn:
            yield self.conn

    @contextmanager
    def write_transaction(self) -> Iterator[apsw.Connection]:
        """An outermost IMMEDIATE transaction: the write lock is taken up front, so a
        busy database fails fast at BEGIN (as :class:`DatabaseBusy`) instead of midway
        through the work. Engine errors leave it as memplug's ``DatabaseError``."""
        if not self.conn.in_transaction:
            try:
                self.conn.execute("BEGIN IMMEDIATE")
                try:
                    yield self.conn
                except BaseException:
                    # SQLite has already rolled back after some errors (SQLITE_FULL,
                    # IOERR); a second ROLLBACK would raise and hide the real error.
                    if self.conn.in_transaction:
                        self.conn.execute("ROLLBACK")
                    raise
                self.conn.execute("COMMIT")
            except apsw.Error as error:
                raise translate_error(error, self.path) from error
        else:
            with self.conn:
                yield self.conn

    def set_lock_wait(self, ms: int | None = None) -> None:
        """Wait at most ``ms`` for another writer's lock (None: :data:`BUSY_TIMEOUT_MS`)."""
        self.conn.set_busy_timeout(BUSY_TIMEOUT_MS if ms is None else ms)

    @contextmanager
    def lock_wait(self, ms: int | None) -> Iterator[None]:
        """Wait at most ``ms`` for the lock inside the block, then the default again
        (a host step must not stall behind another writer for the whole timeout)."""
        if ms is None:
            yield
            return
        self.set_lock_wait(ms)
        try:
            yield
        finally:
            self.set_lock_wait()

    # -- schema -------------------------------------------------------------------

    def schema_version(self) -> int:
        row = self.conn.execute("PRAGMA user_version").fetchone()
        return int(row[0]) if row else 0

    def pending_migrations(self, migrations: list[Migration] | None = None) -> bool:
        migrations = load_migrations() if migrations is None else migrations
        return self.schema_version() < len(migrations)

    def refuse_newer(self, migrations: list[Migration] | None = None) -> None:
        """Raise :class:`SchemaTooNew` for a database written by a newer memplug."""
        latest = len(load_migrations() if migrations is None else migrations)
        current = self.schema_version()
        if current > latest:
            raise SchemaTooNew(
                f"the database {self.path} has schema {current}, newer than this memplug "
                f"({latest}); upgrade memplug instead"
            )

    def migrate(
        self, *, readonly: bool = False, migrations: list[Migration] | None = None
    ) -> list[str]:
        """Apply pending migrations; refuse a newer database.

        Every pending migration runs inside ONE exclusive transaction, so a failure
        part-way leaves the file as it was, at its old version. The version is read
        again once the lock is held: of several processes opening one old (or new) file
        at once, the first migrates and the others, having waited for its lock, find
        nothing left to do."""
        migrations = load_migrations() if migrations is None else migrations
        self.refuse_newer(migrations)
        if not self.pending_migrations(migrations):
            return []
        if readonly:
            raise UsageError(
                f"the database {self.path} needs schema upgrades; open it once for writing"
            )
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            self.refuse_newer(migrations)
            current = self.schema_version()
            applied = []
            for migration in migrations[current:]:
                self._apply(migration)
                applied.append(migration.name)
        except BaseException:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")
        return applied

    def _apply(self, migration: Migration) -> None:
        """One migration inside the caller's transaction, recorded with its number."""
        _run_script(self.conn, migration.sql)
        _run_script(
            self.conn,
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
        )
        self.conn.execute(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
            (migration.version, migration.name, utc_now()),
        )
        self.conn.execute(f"PRAGMA user_version = {migration.version:d}")

    def for_bulk_writes(self) -> None:
        """A page cache of BULK_CACHE_KIB for this connection: an import rewrites the same
        FTS and index pages batch after batch, and with the default 2 MB cache each
        rewrite is a page spilled and read back (100k events: ~0.35 s of system time,
        about 4% of the import). And the WAL is copied back into the file by a second
        connection on a thread, until :meth:`checkpoint` or :meth:`close`: each commit
        otherwise does it itself, and at 100k events that was about a tenth of the
        import on the one core that does everything else (SQLite releases the GIL)."""
        self.conn.execute(f"PRAGMA cache_size = -{BULK_CACHE_KIB:d}")
        if self._checkpointer is None and not self.readonly:
            self._checkpointer = _Checkpointer(self.path)
            self.conn.execute("PRAGMA wal_autocheckpoint = 0")

    def _stop_checkpointer(self) -> bool:
        """Whether a bulk checkpointer was running (it is stopped now)."""
        if self._checkpointer is None:
            return False
        self._checkpointer.stop()
        self._checkpointer = None
        return True

    def checkpoint(self) -> None:
        """Fold the WAL back into the file after a large write, so it does not linger at
        the size of the whole import (a busy reader just makes this a partial no-op)."""
        if self._stop_checkpointer():
            self.conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT:d}")
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()

    def integrity_check(self) -> list[str]:
        """``['ok']`` when SQLite finds nothing wrong; else its messages."""
        return [str(row[0]) for row in self.conn.execute("PRAGMA integrity_check")]

    def close(self) -> None:
        self._stop_checkpointer()
        self.conn.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
