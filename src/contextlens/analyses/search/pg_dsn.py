"""A user's own PostgreSQL, named by a DSN: checked by libpq's own rules before any work, tried once,
and stored without its secrets.

A DSN is a libpq connection string: ``key=value`` pairs (values may be quoted) or a
``postgresql://`` URL. It is parsed with libpq's parser (through psycopg), never with a regular
expression: a quoted password with spaces, or ``?password=`` in a URL, is then one parameter like any
other. What an index's manifest keeps is the DSN rebuilt from its parameters less the secret ones
(``password``, ``sslpassword``); at use, libpq finds the password the way it always does, in
``$PGPASSWORD`` or ``~/.pgpass`` (or a ``--dsn`` given again). No message here repeats the DSN's
text, so no password reaches a terminal, a log or a web page.
"""

from __future__ import annotations

import re

from contextlens.errors import ParameterError

SECRET_KEYS = ("password", "sslpassword")
CONNECT_SECONDS = 15  # the trial connection's limit, unless the DSN sets connect_timeout
SHAPE = "give key=value pairs (host=db.example dbname=vectors user=app) or a postgresql:// URL"


def dsn_parameters(dsn: str) -> dict[str, str]:
    """The DSN's parameters as libpq reads them; a DSN libpq refuses, or an empty one, is a
    :class:`ParameterError` naming ``dsn`` (the CLI says ``--dsn``)."""
    if not isinstance(dsn, str):
        raise ParameterError("dsn", f"must be a connection string, not {type(dsn).__name__}; {SHAPE}")
    if not dsn.strip():
        raise ParameterError("dsn", "is empty: leave it out for the embedded PostgreSQL, or " + SHAPE)
    from psycopg import ProgrammingError
    from psycopg.conninfo import conninfo_to_dict

    try:
        params = conninfo_to_dict(dsn)
    except ProgrammingError as exc:
        raise ParameterError("dsn", f"is not a libpq connection string ({_reason(exc)}); {SHAPE}") from None
    if not params:
        raise ParameterError("dsn", "names no connection parameter; " + SHAPE)
    return {k: str(v) for k, v in params.items()}


def without_secrets(dsn: str) -> str:
    """The DSN rebuilt (libpq ``key=value`` form, libpq's quoting) without ``password``/``sslpassword``:
    what may be written to a manifest and shown."""
    from psycopg.conninfo import make_conninfo

    params = {k: v for k, v in dsn_parameters(dsn).items() if k not in SECRET_KEYS}
    return make_conninfo(**params)


def checked_dsn(dsn: str | None) -> str | None:
    """``dsn`` parsed and tried before any work (``None``: the embedded server, nothing to try).

    A DSN libpq refuses is a :class:`ParameterError`; a server that cannot be reached, or has no
    pgvector, a ``DatabaseError`` in one line (the server's reason, never the DSN's text)."""
    if dsn is None:
        return None
    params = dsn_parameters(dsn)
    from psycopg.conninfo import make_conninfo

    from contextlens.analyses.search import pg_server

    # a host that drops packets would otherwise hold the command for the kernel's TCP timeout
    trial = dsn if "connect_timeout" in params else make_conninfo(dsn, connect_timeout=CONNECT_SECONDS)
    pg_server.connect(trial).close()
    return dsn


def _reason(exc: Exception) -> str:
    """libpq's complaint without the fragment of the DSN it quotes (which may be the password)."""
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return re.sub(r'\s*"[^"]*"', "", first).strip() or "unreadable"
