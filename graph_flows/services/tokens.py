"""Token use cases: create, list and revoke the bearer tokens of MCP over HTTP, and verify a
presented token (the scope it is bound to, read-only or not, or why it is refused).

A token is ``krag_`` followed by 43 URL-safe characters (``secrets.token_urlsafe(32)``,
256 random bits); it is shown once by :func:`create_token` and only its SHA-256 hash is
stored. A fast unsalted hash is enough here: slow, salted KDFs (bcrypt, argon2) exist to
stop guessing of low-entropy passwords from a stolen hash, and nobody can enumerate 2**256
random tokens, so a lookup by hash (an index scan) stays safe. The stored hash is compared
again with :func:`hmac.compare_digest` after the lookup.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import secrets
import string
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from graph_flows.services.errors import RequestError
from storage import InvalidInputError, KnowledgeStore
from storage import scopes as scope_store
from storage import tokens as token_store
from storage.tokens import TokenRow

log = logging.getLogger(__name__)

PREFIX = "krag_"
TOKEN_LENGTH = len(PREFIX) + 43
MAX_TOKEN_CHARS = 200
"""A presented token longer than this is refused before any lookup."""
MAX_EXPIRES_DAYS = 3650
_TOKEN_CHARS = frozenset(string.ascii_letters + string.digits + "-_")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_DURATION = re.compile(r"(\d{1,7})([dhm])")
_UNIT = {"d": "days", "h": "hours", "m": "minutes"}


@dataclass(frozen=True, slots=True)
class CreatedToken:
    """A new token: ``token`` is the secret, shown once and never stored."""

    token: str
    info: TokenRow


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of :func:`verify_token`: the token's row when accepted, else ``reason``
    (one line, never containing the presented token)."""

    row: TokenRow | None
    reason: str = ""


def hash_token(token: str) -> str:
    """The hex SHA-256 of ``token`` (what the database stores)."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def new_token() -> str:
    """A fresh random token."""
    return PREFIX + secrets.token_urlsafe(32)


def check_token_name(name: str) -> str:
    """A token name: 1-64 letters, digits or ``._-``, starting with a letter or digit."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise RequestError(f"invalid --name {str(name)[:40]!r}: use 1-64 letters, digits or "
                           "._- (starting with a letter or digit)")
    return name


def default_name(scope: str) -> str:
    """``<scope>-<6 hex digits>``, the scope's characters outside the name's set as ``-``."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "-", scope).lstrip("._-")[:50] or "token"
    return f"{safe}-{secrets.token_hex(3)}"


def parse_expires(value: str | None, now: datetime | None = None) -> datetime | None:
    """``--expires``: a duration (``30d``, ``12h``, ``90m``) or an ISO date or date-time in
    the future, at most 10 years ahead; None or empty: never."""
    if value is None or not value.strip():
        return None
    now, text = now or datetime.now(UTC), value.strip()
    if match := _DURATION.fullmatch(text.lower()):
        delta = timedelta(**{_UNIT[match.group(2)]: int(match.group(1))})
        when = now + delta
    else:
        try:
            parsed = (datetime.fromisoformat(text) if "T" in text or " " in text
                      else datetime.combine(date.fromisoformat(text), datetime.min.time()))
        except ValueError:
            raise RequestError(f"--expires must be a duration such as 30d, 12h or 90m, or an "
                               f"ISO date such as 2027-01-31; got {text[:40]!r}") from None
        when = parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    if when <= now:
        raise RequestError(f"--expires {text[:40]!r} is not in the future")
    if when - now > timedelta(days=MAX_EXPIRES_DAYS):
        raise RequestError(f"--expires {text[:40]!r} is more than {MAX_EXPIRES_DAYS} days "
                           "ahead; omit --expires for a token that does not expire")
    return when


def create_token(store: KnowledgeStore, scope: str, *, name: str | None = None,
                 read_only: bool = False, expires: str | None = None) -> CreatedToken:
    """Store a new token bound to ``scope`` (declared as a root scope when it is new) and
    return it with the secret. A bad scope, name or expiry, or a name already taken, is a
    one-line error and writes nothing."""
    try:
        scope_store.check_name(scope)
    except InvalidInputError as exc:
        raise RequestError(f"--scope: {exc}") from None
    name = check_token_name(name) if name is not None else default_name(scope)
    when = parse_expires(expires)
    token = new_token()
    with store.transaction() as conn:
        row = token_store.insert_token(conn, name, scope, hash_token(token), read_only, when)
    log.info("token %s created for scope %s (read_only=%s)", name, scope, read_only)
    return CreatedToken(token, row)


def list_tokens(store: KnowledgeStore) -> list[TokenRow]:
    """Every token (no secrets, no hashes), by name."""
    with store.connect() as conn:
        return token_store.list_tokens(conn)


def revoke_token(store: KnowledgeStore, name: str) -> TokenRow:
    """Revoke the token named ``name``; an unknown name is a one-line error."""
    with store.transaction() as conn:
        row = token_store.revoke(conn, name)
    log.info("token %s revoked", name)
    return row


def has_active_tokens(store: KnowledgeStore) -> bool:
    """Whether any token is neither revoked nor expired."""
    with store.connect() as conn:
        return token_store.active_count(conn) > 0


def status(row: TokenRow, now: datetime | None = None) -> str:
    """``active``, ``revoked``, ``expired`` or ``scope gone``."""
    now = now or datetime.now(UTC)
    if row.revoked_at is not None:
        return "revoked"
    if row.expires_at is not None and row.expires_at <= now:
        return "expired"
    return "active" if row.scope_exists else "scope gone"


def malformed(token: str) -> str:
    """Why ``token`` cannot be a krag token ('' when its shape is right)."""
    if len(token) > MAX_TOKEN_CHARS:
        return (f"bearer token too long ({len(token)} characters; krag tokens have "
                f"{TOKEN_LENGTH})")
    if not token.startswith(PREFIX) or not set(token) <= _TOKEN_CHARS:
        return "malformed bearer token: krag tokens look like krag_ followed by 43 " \
               "letters, digits, - or _"
    return ""


def verify_token(store: KnowledgeStore, token: str) -> Verdict:
    """Look ``token`` up by its hash: its row when active, else why it is refused."""
    if reason := malformed(token):
        return Verdict(None, reason)
    digest = hash_token(token)
    with store.transaction() as conn:
        found = token_store.find_by_hash(conn, digest)
        if found is None or not hmac.compare_digest(found[1], digest):
            return Verdict(None, "unknown bearer token: it was never issued here (or the "
                                 "database was reset); `krag token create` makes one")
        row = found[0]
        state = status(row)
        if state == "active":
            token_store.touch(conn, row.name)
            return Verdict(row)
    return Verdict(None, refusal(row, state) + "; `krag token create` makes a new one")


def refusal(row: TokenRow, state: str) -> str:
    """Why a stored token in ``state`` (not active) is refused, naming the token."""
    if state == "revoked":
        return f"token {row.name!r} was revoked"
    if state == "expired" and row.expires_at is not None:
        return f"token {row.name!r} expired at {row.expires_at.astimezone(UTC):%Y-%m-%d %H:%M} UTC"
    return f"the scope {row.scope!r} of token {row.name!r} no longer exists"
