"""Storage: one interface (base.Store), the embedded SQLite store and the PostgreSQL
server store behind it."""
from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..errors import FourfoldError

SERVER_SCHEMES = ("postgresql", "postgres")


# the URL parameters a store URL is shown with: none that may carry a secret (password,
# sslpassword, a key file's path ...)
SHOWN_PARAMETERS = frozenset({"host", "hostaddr", "port", "dbname", "user", "sslmode",
                              "connect_timeout", "application_name", "target_session_attrs"})


def redacted(url: str) -> str:
    """A store URL fit to show: without its password and any parameter but the harmless
    ones (SHOWN_PARAMETERS)."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            userinfo, _, hostport = netloc.rpartition("@")
            netloc = userinfo.partition(":")[0] + "@" + hostport
        query = urlencode([(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
                           if k.lower() in SHOWN_PARAMETERS])
        return urlunsplit((parts.scheme, netloc, parts.path, query, ""))
    except ValueError:
        return "the store URL (unreadable)"


def open_server_store(url: str):
    """The store a --store URL names; only PostgreSQL servers so far."""
    scheme = urlsplit(url).scheme.lower() if "://" in url else ""
    if scheme not in SERVER_SCHEMES:
        raise FourfoldError(f"unknown store {redacted(url)!r}: give a PostgreSQL URL such as "
                            "postgresql://user@host:5432/fourfold (leave --store out for the "
                            "embedded index beside the folder)")
    from .postgres import PostgresStore  # psycopg: loaded only for a server

    return PostgresStore(url)


def open_store(address: tuple[str, str]):
    """A store opened again from its address() (another process's, for reading)."""
    kind, where = address
    if kind == "sqlite":
        from .sqlite import SQLiteStore

        return SQLiteStore(where, readonly=True)
    return open_server_store(where)
