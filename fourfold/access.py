"""Who may see what: access tokens for a shared server, each granting read (or also
write) on a list of repositories or on all of them.

A token is a random secret shown once, when it is created; the index keeps only its
SHA-256 (a secret of 256 random bits needs no slow hash to resist guessing), so a copy of
the database gives no working token. Every request looks its token up again, so a revoked
token is refused from the next request on.
"""
from __future__ import annotations

import hashlib
import re
import secrets
import time
from dataclasses import dataclass

from .errors import FourfoldError
from .store.base import Store, TokenRecord

TOKEN_PREFIX = "fft_"  # recognisable in logs and secret scanners
SCOPES = ("read", "write")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@/-]{0,99}")


@dataclass(frozen=True)
class Grant:
    """What one token allows."""

    name: str
    scope: str  # "read" or "write"
    repositories: frozenset[str] | None  # None: every repository

    def sees(self, repository: str) -> bool:
        return self.repositories is None or repository in self.repositories

    @property
    def writes(self) -> bool:
        return self.scope == "write"


def token_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def create_token(store: Store, name: str, scope: str = "read",
                 repositories: list[str] | None = None) -> str:
    """A new token named `name`; returns its secret, which is not kept anywhere."""
    if not NAME.fullmatch(name or ""):
        raise FourfoldError(f"bad token name {name!r}: use letters, digits and . _ @ / - "
                            "(at most 100 characters)")
    if scope not in SCOPES:
        raise FourfoldError(f"unknown scope {scope!r}; use {' or '.join(SCOPES)}")
    if any(t.name == name and t.revoked_at is None for t in store.tokens()):
        raise FourfoldError(f"a token named {name!r} exists; revoke it first or pick "
                            "another name")
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    store.put_token(TokenRecord(name, token_hash(secret), scope,
                                sorted(set(repositories)) if repositories else None,
                                time.time(), None))
    return secret


def revoke_token(store: Store, name: str) -> None:
    if not store.revoke_token(name, time.time()):
        raise FourfoldError(f"no active token named {name!r}")


def grant_of(store: Store, secret: str) -> Grant | None:
    """The grant of a presented secret; None for an unknown or revoked one."""
    record = store.token_by_hash(token_hash(secret))
    if record is None or record.revoked_at is not None:
        return None
    repos = frozenset(record.repositories) if record.repositories is not None else None
    return Grant(record.name, record.scope, repos)
