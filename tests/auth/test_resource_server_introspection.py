"""Opaque tokens checked by RFC 7662 introspection, both engines: active passes (and is cached
until its ``exp``), inactive, another audience, expired, and a broken endpoint are 401."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest
import trio

from .conftest import INTROSPECTION_CLIENT, RESOURCE, AuthServer
from .test_resource_server import assert_unauthorized, bearer, call_whoami, protected


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
    exp = int(time.time()) + 3
    auth_server.active["short"] = active(auth_server, exp=exp)
    extra = introspecting(auth_server, leeway_seconds=0)
    async with protected(auth_server, engine, **extra) as (_, wire):
        assert (await call_whoami(wire, bearer("short"))).status == 200
        assert (await call_whoami(wire, bearer("short"))).status == 200
        assert auth_server.introspections == ["short"]
        await trio.sleep(exp - time.time() + 0.2)
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
        reply = await call_whoami(wire, bearer("tok"))  # inactive results are not cached
        assert len(auth_server.introspections) == 2


async def test_wrong_client_secret_is_401(auth_server: AuthServer, engine: str) -> None:
    auth_server.active["tok"] = active(auth_server)
    extra = introspecting(auth_server, introspection_client_secret="wrong")
    async with protected(auth_server, engine, **extra) as (_, wire):
        assert_unauthorized(await call_whoami(wire, bearer("tok")), "invalid_token")
