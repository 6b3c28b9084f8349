"""The embedded server's lifetime: a keeper process starts it, and it stops once idle, whatever
happens to its users.

**Lock files** (``start.lock``, ``users.lock``, ``reaper.lock``, ``last_use``, ``idle_limit``) are 0600 in the
0700 folder ``<cache>/pgvector``: another user who can pass through the cache folder can neither
``flock`` one (and hang every command) nor replace it.

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
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from contextlens.analyses.search.pg_cluster import (
    IDLE_ENV,
    IDLE_SECONDS,
    POLL_SECONDS,
    REAPER_ENV,
    SERVER_OPTIONS,
    START_SECONDS,
    Cluster,
    DatabaseError,
    binaries,
    read_text,
    server_environment,
)
from contextlens.core import atomic_files
from contextlens.core.private_files import open_lock, open_private


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


def start(cluster: Cluster, idle: float) -> None:
    """Start the server as the child of a new keeper process (:func:`keep`), which stops it once
    it has been idle for its limit, and whose death stops it too (the postmaster's parent-death
    signal); returns when it accepts connections."""
    cluster.socket_dir.mkdir(mode=0o700, exist_ok=True)
    if cluster.as_root and cluster.socket_dir.lstat().st_uid != cluster.owner.pw_uid:
        os.chown(cluster.socket_dir, cluster.owner.pw_uid, cluster.owner.pw_gid, follow_symlinks=False)
    keeper = _spawn_reaper(cluster.root, idle, mode="keep")
    try:
        answer = _read_line(keeper.stdout, START_SECONDS + 30)
    finally:
        keeper.stdout.close()
    if answer != "ready":
        if keeper.poll() is None:
            keeper.kill()  # its postmaster, if any, gets SIGTERM
        raise DatabaseError(f"PostgreSQL did not start ({answer or 'its keeper ended without a word'}); "
                            f"its log is {cluster.folder / 'server.log'}")  # fmt: skip


def mark_use(root: Path, idle: float) -> None:
    """A use now: ``last_use`` touched, and ``idle_limit`` made this user's limit (the reaper reads
    it at each look, so a later command's shorter limit applies to a reaper already running)."""
    _touch(root / "last_use")
    text, path = f"{idle!r}\n", root / "idle_limit"
    if read_text(path) != text or path.lstat().st_mode & 0o077:  # a new file: 0600 as it is made
        atomic_files.write_text(path, text, mode=0o600)


def idle_limit(root: Path, default: float) -> float:
    """The idle limit in effect: the last user's (``idle_limit``), else ``default``."""
    try:
        value = float(read_text(root / "idle_limit").strip())
    except ValueError:
        return default
    return value if value >= 0 else default


def leave_reaper(root: Path, idle: float) -> None:
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
    reaper = try_lock(cluster.root / "reaper.lock")  # an older reaper may hold it a moment longer
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
        say(f"cannot run postgres: {exc}")
        return "failed"
    why = _until_ready(cluster, server)
    say(why)
    if why != "ready":
        if server.poll() is None:
            server.terminate()
        return why
    return _watch(cluster, server.pid, idle, reaper, server)


def reap(root: Path | str, idle: float, say: Callable[[str], None] = lambda line: None) -> str:
    """Watch the running server until it stops, and stop it once nobody has used it for its idle
    limit (:func:`idle_limit`, else ``idle``); returns why it ended, and ``say``-s ``watching`` or
    that first. One reaper per cluster (``reaper.lock``); it follows one postmaster and ends when
    that one is gone."""
    cluster = Cluster(Path(root))
    if not cluster.folder.is_dir():
        say("cluster removed")
        return "cluster removed"  # nothing left to stop
    reaper = try_lock(cluster.root / "reaper.lock")
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
                reaper = try_lock(cluster.root / "reaper.lock")
                if reaper is None and child is None:
                    return "another reaper watches this cluster"
            if reaper is not None:
                busy = not _nobody_inside(cluster.root)
                if busy or was_busy:
                    if was_busy and not busy:
                        _touch(cluster.root / "last_use")  # idle from now, however the last user left
                    was_busy = busy
                elif idle_for(cluster.root) >= idle_limit(cluster.root, idle) and _stop_if_idle(cluster, pid, idle):
                    if child is not None:
                        child.wait()
                    return "stopped after idle"
            time.sleep(POLL_SECONDS)
    finally:
        if reaper is not None:
            reaper.close()


def _stop_if_idle(cluster: Cluster, pid: int, idle: float) -> bool:
    """Stop the server ``pid`` if it is still idle, under the start lock; True when it is gone."""
    with locked(cluster.root / "start.lock", fcntl.LOCK_EX):
        if cluster.postmaster() != pid:
            return True
        try:
            users = open_lock(cluster.root / "users.lock", fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # a user came in meanwhile
        with users:
            if idle_for(cluster.root) < idle_limit(cluster.root, idle):
                return False
            cluster.stop()
    return True


def _until_ready(cluster: Cluster, server: subprocess.Popen) -> str:
    """``ready`` once the postmaster ``server`` accepts connections (its ``postmaster.pid`` says so,
    as pg_ctl -w reads it), else why not."""
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            log = read_text(cluster.folder / "server.log", tail=600).strip().splitlines()[-3:]
            return f"postgres exited with status {server.returncode}: {' '.join(log)}"
        lines = read_text(cluster.folder / "data" / "postmaster.pid").splitlines()
        if len(lines) >= 8 and lines[0].strip() == str(server.pid) and lines[7].strip() == "ready":
            return "ready"
        time.sleep(0.05)
    return f"postgres was not ready after {START_SECONDS:.0f} s"


def _die_with_parent():
    """A ``preexec_fn`` that asks for SIGTERM when the parent dies (``prctl(PR_SET_PDEATHSIG)``)."""
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before the fork
    return lambda: prctl(1, signal.SIGTERM)


def say(line: str) -> None:
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


def try_lock(path: Path):
    """``path`` locked exclusively now, or None when another process holds it."""
    try:
        return open_lock(path, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return None


def lock_free(path: Path) -> bool:
    lock = try_lock(path)
    if lock is not None:
        lock.close()
    return lock is not None


def _nobody_inside(root: Path) -> bool:
    """The users' lock is free, looked at under the start lock (so that the look never makes a user
    leaving think another is inside); a user entering or leaving (holding that lock) counts as inside."""
    start = try_lock(root / "start.lock")
    if start is None:
        return False
    with start:
        return lock_free(root / "users.lock")


def reaper_watches(root: Path) -> bool:
    return not lock_free(root / "reaper.lock")


def idle_for(root: Path) -> float:
    try:
        return time.time() - (root / "last_use").stat().st_mtime
    except FileNotFoundError:
        return float("inf")


@contextlib.contextmanager
def locked(path: Path, how: int) -> Iterator[None]:
    with open_lock(path, how):
        yield


def _touch(path: Path) -> None:
    """``path``'s time set to now (made 0600 if missing or older and wider)."""
    fd = open_private(path, os.O_WRONLY)
    try:
        os.utime(fd)
    finally:
        os.close(fd)
