"""Opaque tokens checked by RFC 7662 introspection, both engines: active passes (and is cached
until its ``exp``), inactive (cached briefly), another audience, expired are 401; an
unreachable or failing endpoint is 503."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

from mcpfast.server.auth import IntrospectionVerifier

from .conftest import INTROSPECTION_CLIENT, RESOURCE, AuthServer
from .test_resource_server import (
    assert_unauthorized,
    assert_unavailable,
    bearer,
    call_whoami,
    make_server,
    protected,
)


def introspecting(auth_server: AuthServer, **extra: Any) -> dict[str, Any]:
    return {
        "introspection_url": auth_server.url + "/introspect",
        "introspection_client_id": INTROSPECTION_CLIENT[0],
        "introspection_client_secret": INTROSPECTION_CLIENT[1],
        "jwks_url": None,
        **extra,
    }


def active(auth_server: AuthServer, **overrides: Any) -> dict[str, Any]:
    answer = {
        "active": True,
        "sub": "opaque-user",
        "client_id": "c-7",
        "scope": "mcp",
        "aud": RESOURCE,
        "iss": auth_server.issuer,
        "exp": int(time.time()) + 60,
    }
    answer.update(overrides)
    return {k: v for k, v in answer.items() if v is not None}


async def test_active_token_passes_and_is_cached(
    auth_server: AuthServer, engine: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    auth_server.active["opaque-1"] = active(auth_server)
    async with protected(auth_server, engine, **introspecting(auth_server)) as (_, wire):
        for _ in range(3):
            reply = await call_whoami(wire, bearer("opaque-1"))
            assert reply.status == 200, reply.response.text
            assert reply.result["structuredContent"]["subject"] == "opaque-user"
            assert reply.result["structuredContent"]["client_id"] == "c-7"
        assert auth_server.introspections == ["opaque-1"]
        assert auth_server.jwks_fetches == 0
        assert (await call_whoami(wire, bearer("opaque-secret-2"))).status == 401
    assert caplog.records
    assert "opaque-1" not in caplog.text and "opaque-secret-2" not in caplog.text


async def test_cache_ends_at_the_tokens_exp(auth_server: AuthServer, engine: str) -> None:
    now = time.time()
    exp = int(now) + 3
    auth_server.active["short"] = active(auth_server, exp=exp)
    server = make_server()
    server.token_verifier = IntrospectionVerifier(
        auth_server.url + "/introspect",
        *INTROSPECTION_CLIENT,
        audience=RESOURCE,
        issuer=auth_server.issuer,
        leeway=0,
        clock=lambda: now,
    )
    extra = introspecting(auth_server, leeway_seconds=0)
    async with protected(auth_server, engine, server=server, **extra) as (_, wire):
        assert (await call_whoami(wire, bearer("short"))).status == 200
        now = exp - 0.1
        assert (await call_whoami(wire, bearer("short"))).status == 200
        assert auth_server.introspections == ["short"]
        now = exp + 0.1
        auth_server.active.pop("short")
        assert (await call_whoami(wire, bearer("short"))).status == 401
        assert auth_server.introspections == ["short", "short"]


@pytest.mark.parametrize(
    "kind", ["inactive", "other_audience", "expired", "no_audience", "other_issuer"]
)
async def test_refused_by_introspection(auth_server: AuthServer, engine: str, kind: str) -> None:
    answers = {
        "other_audience": active(auth_server, aud="http://other.test"),
        "expired": active(auth_server, exp=int(time.time()) - 600),
        "no_audience": active(auth_server, aud=None),
        "other_issuer": active(auth_server, iss="http://evil.test"),
    }
    if kind in answers:
        auth_server.active["tok"] = answers[kind]
    async with protected(auth_server, engine, **introspecting(auth_server)) as (_, wire):
        reply = await call_whoami(wire, bearer("tok"))
        assert_unauthorized(reply, "invalid_token")
        reply = await call_whoami(wire, bearer("tok"))
        assert_unauthorized(reply, "invalid_token")
        # inactive results are cached (briefly); other refusals are not (nbf may pass)
        assert len(auth_server.introspections) == (1 if kind == "inactive" else 2)


async def test_wrong_client_secret_is_401(auth_server: AuthServer, engine: str) -> None:
    auth_server.active["tok"] = active(auth_server)
    extra = introspecting(auth_server, introspection_client_secret="wrong")
    async with protected(auth_server, engine, **extra) as (_, wire):
        assert_unauthorized(await call_whoami(wire, bearer("tok")), "invalid_token")


async def test_an_inactive_token_is_introspected_once(auth_server: AuthServer, engine: str) -> None:
    async with protected(auth_server, engine, **introspecting(auth_server)) as (_, wire):
        assert_unauthorized(await call_whoami(wire, bearer("bad-token")), "invalid_token")
        assert_unauthorized(await call_whoami(wire, bearer("bad-token")), "invalid_token")
        assert auth_server.introspections == ["bad-token"]
        assert_unauthorized(await call_whoami(wire, bearer("other-bad")), "invalid_token")
        assert auth_server.introspections == ["bad-token", "other-bad"]


async def test_inactive_results_are_cached_briefly() -> None:
    from mcpfast.server.auth import InvalidToken, RequestInfo
    from mcpfast.server.auth.introspection import INACTIVE_SECONDS

    verifier = IntrospectionVerifier("http://unused.test", "c", "s", audience=RESOURCE)
    calls = 0

    async def inactive(token: str) -> dict[str, Any]:
        nonlocal calls
        calls += 1
        return {"active": False}

    verifier._introspect = inactive  # type: ignore[method-assign]
    info = RequestInfo(method="POST", url=RESOURCE)
    for _ in range(2):
        with pytest.raises(InvalidToken):
            await verifier.verify("tok", info)
    assert calls == 1 and verifier.peek("tok") is None
    assert INACTIVE_SECONDS <= 30
    entries = verifier.cache._entries
    [(_, until)] = entries.values()
    assert until <= time.time() + INACTIVE_SECONDS
    short = IntrospectionVerifier(
        "http://unused.test", "c", "s", audience=RESOURCE, cache_seconds=5
    )
    short._introspect = inactive  # type: ignore[method-assign]
    with pytest.raises(InvalidToken):
        await short.verify("tok", info)
    [(_, until)] = short.cache._entries.values()
    assert until <= time.time() + 5


async def test_unreachable_introspection_is_503(
    auth_server: AuthServer, engine: str, closed_port: int
) -> None:
    auth_server.active["tok"] = active(auth_server)
    url = f"http://127.0.0.1:{closed_port}/introspect"
    extra = introspecting(auth_server, introspection_url=url)
    async with protected(auth_server, engine, **extra) as (_, wire):
        assert_unavailable(await call_whoami(wire, bearer("tok")))
        assert_unavailable(await call_whoami(wire, bearer("tok")))  # nothing cached


async def test_introspection_5xx_is_503_then_recovers(auth_server: AuthServer, engine: str) -> None:
    auth_server.active["tok"] = active(auth_server)
    route = auth_server.route
    down = True

    def flaky(path: str, headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
        if down and path == "/introspect":
            return 503, b"{}"
        return route(path, headers, body)

    auth_server.route = flaky  # type: ignore[method-assign]
    async with protected(auth_server, engine, **introspecting(auth_server)) as (_, wire):
        assert_unavailable(await call_whoami(wire, bearer("tok")))
        down = False
        assert (await call_whoami(wire, bearer("tok"))).status == 200
