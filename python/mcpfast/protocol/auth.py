"""Authorization rules (no I/O): the ``Authorization`` header, scopes, the ``WWW-Authenticate``
challenges both ways (RFC 6750 section 3, RFC 9728 section 5.1, RFC 9449 section 7.1: the
server writes them, `parse_challenges` reads them for the client), the protected
resource metadata document (RFC 9728 section 2) with its well-known paths, the URL matching of
a DPoP proof's ``htu`` (`same_url`; the proof's other checks are `mcpfast.protocol.dpop`), and
which URLs a client trusts with a person or a secret (`secure_url`).

What verifies a token or a proof (keys, signatures, clocks, replay) is `mcpfast.server.auth`.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple
from urllib.parse import urlsplit, urlunsplit

WELL_KNOWN = "/.well-known/oauth-protected-resource"
"""RFC 9728 section 3: the well-known suffix of the protected resource metadata."""

INVALID_TOKEN = "invalid_token"
INVALID_REQUEST = "invalid_request"
INSUFFICIENT_SCOPE = "insufficient_scope"
INVALID_DPOP_PROOF = "invalid_dpop_proof"
USE_DPOP_NONCE = "use_dpop_nonce"
DPOP_ERRORS = frozenset({INVALID_DPOP_PROOF, USE_DPOP_NONCE})

MAX_TOKEN_BYTES = 8192
"""The longest access token (or DPoP proof) looked at: past it, 401 ``invalid_token`` without
decoding anything (a JWT with a few claims is well under 2 KB)."""

_TOKEN68 = re.compile(r"[A-Za-z0-9\-._~+/]+=*\Z")
"""RFC 6750 section 2.1 ``b64token``: the only characters a bearer token may have."""
_SCOPE_TOKEN = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+\Z")
"""RFC 6749 section 3.3 ``scope-token``."""


class Credentials(NamedTuple):
    """What an ``Authorization`` header carries: its scheme, ``Bearer`` or ``DPoP`` (as
    written, compared case-insensitively), and the token."""

    scheme: str
    token: str


class Refusal(NamedTuple):
    """Why a request is refused, as RFC 6750 / RFC 9449 name it: the HTTP status (401, 403 or
    400), the ``error`` code (None: no token was given), a description and the scopes the
    operation needs."""

    status: int
    error: str | None
    description: str
    scopes: frozenset[str] = frozenset()


def credentials(header: str | None) -> Credentials | None:
    """The scheme and token of an ``Authorization`` header; None when there is none, or when
    its scheme is another one (``Basic``: no access token was presented).

    Raises:
        ValueError: a ``Bearer`` / ``DPoP`` header with no token, a space in it, or a token
            over `MAX_TOKEN_BYTES`. (Its characters are `is_token68`'s to check, by a verifier
            meeting a token for the first time: a cached token needs no second look.)
    """
    if header is None:
        return None
    if header.startswith("Bearer "):  # the usual spelling: no lower-casing, no split
        scheme, token = "Bearer", header[7:]
    else:
        name, _, token = header.strip().partition(" ")
        lowered = name.lower()
        if lowered not in ("bearer", "dpop"):
            return None
        scheme = "DPoP" if lowered == "dpop" else "Bearer"
    if len(token) > MAX_TOKEN_BYTES:
        raise ValueError("access token too large")
    token = token.strip()
    if not token:
        raise ValueError("no access token")
    if " " in token:
        raise ValueError("malformed access token")
    return Credentials(scheme, token)


def is_token68(token: str) -> bool:
    """Whether ``token`` has only the characters of RFC 6750's ``b64token``."""
    return _TOKEN68.match(token) is not None


def parse_scopes(value: str | Iterable[str] | None) -> frozenset[str]:
    """A scope set from a space-delimited string (the ``scope`` claim, RFC 8693's form) or a
    list of scopes (the ``scp`` claim some servers issue); empty for None.

    Raises:
        ValueError: a scope with characters RFC 6749 section 3.3 does not allow.
    """
    if value is None:
        return frozenset()
    items = value.split() if isinstance(value, str) else [str(v) for v in value]
    for item in items:
        if not _SCOPE_TOKEN.match(item):
            raise ValueError(f"invalid scope {item!r}")
    return frozenset(items)


def scope_text(scopes: Iterable[str]) -> str:
    """A scope set as RFC 6749 writes it: space-delimited (sorted, so it reads the same each
    time)."""
    return " ".join(sorted(scopes))


def lacking(missing: Iterable[str]) -> str:
    """The description of a 403 ``insufficient_scope``: the scopes the token lacks, by name
    (the challenge's ``scope`` names every scope the request needs)."""
    names = sorted(missing)
    return f"the token lacks the scope{'s' if len(names) > 1 else ''} {' '.join(names)}"


def missing_scopes(
    granted: frozenset[str],
    required: Iterable[str],
    implies: Mapping[str, Sequence[str]] | None = None,
) -> frozenset[str]:
    """The scopes of ``required`` that ``granted`` does not cover. ``implies`` maps a broader
    scope to the narrower ones it grants (the spec: servers MUST account for scope hierarchies),
    followed transitively."""
    if granted.issuperset(required):
        return frozenset()
    effective = set(granted)
    if implies:
        pending = list(granted)
        while pending:
            for narrower in implies.get(pending.pop(), ()):
                if narrower not in effective:
                    effective.add(narrower)
                    pending.append(narrower)
    return frozenset(s for s in required if s not in effective)


def _quoted(value: str) -> str:
    """An RFC 9110 ``quoted-string`` (control characters and non-ASCII dropped)."""
    clean = "".join(c for c in value if " " <= c <= "~")
    return '"' + clean.replace("\\", "\\\\").replace('"', '\\"') + '"'


def challenge(
    resource_metadata: str,
    *,
    scheme: str = "Bearer",
    error: str | None = None,
    description: str | None = None,
    scopes: Iterable[str] = (),
    algs: Sequence[str] = (),
) -> str:
    """One ``WWW-Authenticate`` challenge: ``Bearer`` (RFC 6750 section 3 with RFC 9728's
    ``resource_metadata``) or ``DPoP`` (RFC 9449 section 7.1, with ``algs``). ``error`` is
    left out when no token was presented (RFC 6750: the client did not know it needed one)."""
    params = []
    if error is not None:
        params.append(f"error={_quoted(error)}")
    if description:
        params.append(f"error_description={_quoted(description)}")
    text = scope_text(scopes)
    if text:
        params.append(f"scope={_quoted(text)}")
    params.append(f"resource_metadata={_quoted(resource_metadata)}")
    if algs:
        params.append(f"algs={_quoted(' '.join(algs))}")
    return f"{scheme} " + ", ".join(params)


def challenges(
    refusal: Refusal,
    resource_metadata: str,
    *,
    dpop_algs: Sequence[str] = (),
    dpop_only: bool = False,
) -> list[str]:
    """The ``WWW-Authenticate`` values for a refusal: a ``Bearer`` challenge (unless the server
    takes only DPoP-bound tokens) and, when DPoP is on, a ``DPoP`` one (RFC 9449 section 7.1).
    A DPoP error (``invalid_dpop_proof``, ``use_dpop_nonce``) is the ``DPoP`` challenge's only:
    the ``Bearer`` one then names no error (RFC 6750 has no such codes)."""
    out = []
    if not dpop_only:
        bearer_error = None if refusal.error in DPOP_ERRORS else refusal.error
        out.append(
            challenge(
                resource_metadata,
                error=bearer_error,
                description=refusal.description if bearer_error else None,
                scopes=refusal.scopes,
            )
        )
    if dpop_algs:
        out.append(
            challenge(
                resource_metadata,
                scheme="DPoP",
                error=refusal.error,
                description=refusal.description if refusal.error else None,
                scopes=refusal.scopes,
                algs=dpop_algs,
            )
        )
    return out


def metadata_path(resource_path: str) -> str:
    """The well-known path of the metadata of a resource whose URL has ``resource_path`` (RFC
    9728 section 3.1: the suffix goes between the host and the path; ``/mcp`` ->
    ``/.well-known/oauth-protected-resource/mcp``; the root -> the suffix alone)."""
    path = resource_path.rstrip("/")
    return WELL_KNOWN + path if path else WELL_KNOWN


def metadata_url(resource: str) -> str:
    """The URL of the metadata document of ``resource`` (an absolute URL, RFC 9728 section 3.1)."""
    parts = urlsplit(resource)
    return urlunsplit((parts.scheme, parts.netloc, metadata_path(parts.path), "", ""))


def canonical_resource(url: str) -> str:
    """``url`` checked as a resource identifier (RFC 8707 section 2: absolute, no fragment) and
    with its scheme and host lower-cased (the canonical form of the MCP authorization spec),
    no trailing slash.

    Raises:
        ValueError: not an absolute http(s) URL, or with a fragment.
    """
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise ValueError(f"the resource must be an absolute http(s) URL, not {url!r}")
    if parts.fragment or "#" in url:
        raise ValueError(f"the resource must have no fragment: {url!r}")
    path = parts.path.rstrip("/")
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, parts.query, ""))


def same_url(a: str, b: str) -> bool:
    """Whether two request URLs name the same resource for DPoP's ``htu`` (RFC 9449 section
    4.3: query and fragment ignored; scheme and host case-insensitive; a default port is the
    same as none; a trailing slash ignored)."""

    def norm(url: str) -> tuple[str, str, str]:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        host = (parts.hostname or "").lower()
        port = parts.port
        if port is None or (scheme, port) in (("http", 80), ("https", 443)):
            netloc = host
        else:
            netloc = f"{host}:{port}"
        return scheme, netloc, parts.path.rstrip("/") or "/"

    try:
        return norm(a) == norm(b)
    except ValueError:  # a port that is not a number
        return False


def resource_metadata(
    resource: str,
    authorization_servers: Sequence[str],
    *,
    scopes_supported: Iterable[str] = (),
    dpop_algs: Sequence[str] = (),
    dpop_bound_required: bool = False,
    resource_name: str | None = None,
    documentation: str | None = None,
) -> dict[str, Any]:
    """The protected resource metadata document (RFC 9728 section 2). ``authorization_servers``
    is required by the MCP spec (at least one); the bearer method is the header alone (the spec
    forbids tokens in the query)."""
    document: dict[str, Any] = {
        "resource": resource,
        "authorization_servers": list(authorization_servers),
        "bearer_methods_supported": ["header"],
    }
    scopes = sorted(scopes_supported)
    if scopes:
        document["scopes_supported"] = scopes
    if dpop_algs:
        document["dpop_signing_alg_values_supported"] = list(dpop_algs)
        if dpop_bound_required:
            document["dpop_bound_access_tokens_required"] = True
    if resource_name:
        document["resource_name"] = resource_name
    if documentation:
        document["resource_documentation"] = documentation
    return document


# --------------------------------------------------------------------------- trusted URLs


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` names a loopback address (``localhost``, 127.0.0.0/8, ``::1``)."""
    host = host.strip("[]")
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def secure_url(url: str) -> bool:
    """Whether a client may send a person or a secret to ``url``: an ``https:`` URL with a
    host, or an ``http:`` one whose host is loopback (RFC 8252 section 8.3); any other scheme
    (``file:``, ``javascript:``, a custom handler...) is not."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return False
    if not host:
        return False
    scheme = parts.scheme.lower()
    return scheme == "https" or (scheme == "http" and is_loopback_host(host))


# ------------------------------------------------ reading a challenge (the client side)


@dataclass(frozen=True)
class Challenge:
    """One challenge of a ``WWW-Authenticate`` header: its scheme and parameters (names
    lower-cased)."""

    scheme: str
    params: dict[str, str] = field(default_factory=dict)

    @property
    def error(self) -> str | None:
        return self.params.get("error")

    @property
    def scopes(self) -> list[str] | None:
        scope = self.params.get("scope")
        return scope.split() if scope is not None else None

    @property
    def resource_metadata(self) -> str | None:
        return self.params.get("resource_metadata")


_TOKEN = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_PARAM = re.compile(
    rf"\s*({_TOKEN})\s*=\s*(?:\"((?:[^\"\\]|\\.)*)\"|({_TOKEN}))\s*(?:,|$)", re.DOTALL
)
_SCHEME = re.compile(rf"\s*,?\s*({_TOKEN})(?:\s+|$)")
_TOKEN68 = re.compile(r"\s*[A-Za-z0-9\-._~+/]+=*\s*(?:,|$)")


def parse_challenges(values: list[str] | str | None) -> list[Challenge]:
    """The challenges of one or more ``WWW-Authenticate`` header values (RFC 9110 section
    11.6.1; quoted-string escapes undone; unparseable remainders ignored)."""
    if values is None:
        return []
    if isinstance(values, str):
        values = [values]
    found: list[Challenge] = []
    for value in values:
        position = 0
        current: Challenge | None = None
        while position < len(value):
            if value[position] in ", \t":
                position += 1
                continue
            param = _PARAM.match(value, position)
            if param and current is not None:
                quoted, bare = param.group(2), param.group(3)
                text = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else bare
                current.params[param.group(1).lower()] = text or ""
                position = param.end()
                continue
            scheme = _SCHEME.match(value, position)
            if not scheme:
                break
            current = Challenge(scheme.group(1), {})
            found.append(current)
            position = scheme.end()
            token68 = _TOKEN68.match(value, position)
            if token68 and not _PARAM.match(value, position):
                position = token68.end()
    return found
