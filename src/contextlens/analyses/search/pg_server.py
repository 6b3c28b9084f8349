"""The embedded PostgreSQL + pgvector server: one per cache folder, started and stopped by contextlens.

The cluster (who runs it, who may connect) is :mod:`.pg_cluster`; its lifetime (the keeper, the idle
limit, the locks) is :mod:`.pg_keeper`.

:func:`embedded_server` is a context manager: the first user starts the server (initdb first if
the cluster is new) and every user holds a shared lock (``users.lock``) while inside. The server then
**stays up between commands** (a CLI search would otherwise pay 1.5-2 s to start and stop it) until
nobody has been inside for the idle limit (``$CONTEXTLENS_PG_IDLE_SECONDS``, default 300; 0 stops it
at once, as the last user leaves). ``contextlens index server stop`` stops it now.
"""

from __future__ import annotations

import contextlib
import fcntl
import sys
from collections.abc import Iterator
from pathlib import Path

from contextlens.analyses.search.pg_cluster import (  # noqa: F401 (the names tests and callers reach through here)
    ADMIN,
    DATABASE,
    IDLE_ENV,
    POLL_SECONDS,
    REAPER_ENV,
    SERVER_USER,
    SOCKET_NAME,
    USER,
    Cluster,
    DatabaseError,
    binaries,
    ensure_database,
)
from contextlens.analyses.search.pg_keeper import (
    idle_for,
    idle_limit,
    idle_seconds,
    keep,
    leave_reaper,
    lock_free,
    locked,
    mark_use,
    reap,
    reaper_watches,
    say,
    start,
)
from contextlens.core.arguments import one_text, path_argument, seconds
from contextlens.core.private_files import open_lock


@contextlib.contextmanager
def embedded_server(root: Path | str | None = None, idle: float | None = None) -> Iterator[str]:
    """The running embedded server's connection string, for the time of the ``with`` block.

    The first user in starts it (after initdb for a new cluster) under a keeper process; once
    nobody has been inside for ``idle`` seconds (default :func:`idle_seconds`; the limit of the user
    who entered or left last applies) the keeper stops it; with ``idle`` 0 the last one out stops it
    at once. A user who finds the server running with no reaper watching it leaves one.
    """
    idle = idle_seconds() if idle is None else seconds(idle, "idle")
    cluster = Cluster(None if root is None else path_argument(root, "root"))
    cluster.prepare()
    with locked(cluster.root / "start.lock", fcntl.LOCK_EX):
        cluster.adopt()
        if not cluster.initialised():
            cluster.initdb()
        changed = cluster.configure()
        running = cluster.running()
        if running and changed:
            cluster.reload()
        mark_use(cluster.root, idle)
        if not running:
            start(cluster, idle)
        elif not reaper_watches(cluster.root):  # its keeper was killed, or an older contextlens started it
            leave_reaper(cluster.root, idle)
        ensure_database(cluster)
        users = open_lock(cluster.root / "users.lock", fcntl.LOCK_SH)  # held until the block ends
    try:
        yield cluster.conninfo
    finally:
        with locked(cluster.root / "start.lock", fcntl.LOCK_EX):
            mark_use(cluster.root, idle)
            fcntl.flock(users, fcntl.LOCK_UN)
            try:
                if idle <= 0:
                    fcntl.flock(users, fcntl.LOCK_EX | fcntl.LOCK_NB)  # nobody else inside: the last one out
                    cluster.stop()
                elif not reaper_watches(cluster.root):
                    leave_reaper(cluster.root, idle)
            except BlockingIOError:
                pass  # another user is inside; the reaper stops the server after them (limit 0: at once)
            finally:
                users.close()


def server_status(root: Path | str | None = None) -> dict:
    """Whether the embedded server runs, is in use, for how long it has been idle (as its reaper
    counts) and after how long idle it stops (the limit in effect). A running server no reaper
    watches (its reaper was killed) gets one, so that what this says is what happens."""
    cluster = Cluster(Path(root) if root is not None else None)
    default = idle_seconds()
    running = cluster.folder.is_dir() and cluster.initialised() and cluster.running()
    in_use = restarted = False
    if running:
        in_use = not lock_free(cluster.root / "users.lock")
        if not reaper_watches(cluster.root):
            leave_reaper(cluster.root, default)
            restarted = True
    idle_now = idle_for(cluster.root) if (cluster.root / "last_use").exists() else None
    return {"running": running, "in_use": in_use, "idle_seconds": idle_now if running and not in_use else None,
            "idle_timeout_seconds": idle_limit(cluster.root, default), "reaper_restarted": restarted,
            "data": str(cluster.folder)}  # fmt: skip


def stop_server(root: Path | str | None = None) -> bool:
    """Stop the embedded server now; False when it was not running. Refused while a command uses it.
    Its reaper ends with it (a keeper at once, a reaper at its next look)."""
    cluster = Cluster(Path(root) if root is not None else None)
    if not (cluster.folder.is_dir() and cluster.initialised()):
        return False
    with locked(cluster.root / "start.lock", fcntl.LOCK_EX):
        if not cluster.running():
            return False
        try:
            users = open_lock(cluster.root / "users.lock", fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise DatabaseError(
                "the embedded PostgreSQL is in use by another contextlens command; stop it when that ends"
            ) from exc
        with users:
            cluster.stop()
    return True


@contextlib.contextmanager
def database(dsn: str | None = None) -> Iterator[str]:
    """A connection string: ``dsn`` (the user's own PostgreSQL with pgvector) as given, or else the
    embedded server's, running for the time of the block."""
    if dsn:
        yield dsn
        return
    with embedded_server() as conninfo:
        yield conninfo


def connect(conninfo: str):
    """A psycopg connection with pgvector's types ready (the extension is created if missing)."""
    conninfo = one_text(conninfo, "conninfo")
    try:
        import psycopg
    except ImportError as exc:
        raise DatabaseError("pgvector needs psycopg 3: pip install -e '.[pgvector]' (make setup installs it)") from exc
    try:
        # prepare_threshold=None: no server-side prepared statements, whose cached plans would keep
        # using the index after `SET LOCAL enable_indexscan = off` (an "exact" scan that is not one)
        conn = psycopg.connect(conninfo, autocommit=True, prepare_threshold=None)
    except psycopg.OperationalError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DatabaseError(f"cannot connect to PostgreSQL ({first}); check --dsn") from exc
    try:
        if conn.info.server_version >= 140000:  # your own server too: a killed command's query is cancelled
            conn.execute("SET client_connection_check_interval = 1000")
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.Error as exc:
        conn.close()
        raise DatabaseError(f"the database has no pgvector extension ({exc}); install pgvector there") from exc
    return conn


if __name__ == "__main__":  # python -m contextlens.analyses.search.pg_server reap|keep ROOT SECONDS
    if len(sys.argv) == 4 and sys.argv[1] in ("reap", "keep"):
        if sys.argv[1] == "reap":
            reap(sys.argv[2], float(sys.argv[3]), say)
        else:
            keep(sys.argv[2], float(sys.argv[3]))
