"""``mcpfast serve --auth-*`` (and ``MCPFAST_AUTH_*``): the flags become `Config.auth`, which
reaches every worker (``--workers 2``, both engines) as plain data."""

from __future__ import annotations

import argparse

import httpx2
import msgspec
import pytest

from mcpfast.cli.serving import add_auth_arguments, auth_config
from mcpfast.server.config import AuthConfig, Config

from ..e2e.processes import free_port, mcpfast_command, server_process
from .conftest import RESOURCE, AuthServer
from .test_resource_server import challenge_params


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_auth_arguments(parser)
    return parser.parse_args(argv)


def test_no_flags_no_auth() -> None:
    assert auth_config(parse(), {}) is None


def test_flags_win_over_the_environment() -> None:
    args = parse(
        "--auth-issuer",
        "https://as.test",
        "--resource-url",
        RESOURCE,
        "--auth-scopes",
        "mcp,files:read",
    )
    env = {
        "MCPFAST_AUTH_ISSUER": "https://ignored.test",
        "MCPFAST_AUTH_JWKS_URL": "https://as.test/jwks",
        "MCPFAST_AUTH_DPOP": "required",
    }
    config = auth_config(args, env)
    assert config == AuthConfig(
        issuer="https://as.test",
        resource=RESOURCE,
        jwks_url="https://as.test/jwks",
        scopes=["mcp", "files:read"],
        dpop="required",
    )


def test_the_jwt_typ_check_is_on_unless_made_optional() -> None:
    args = parse("--auth-issuer", "https://as.test", "--resource-url", RESOURCE)
    config = auth_config(args, {})
    assert config is not None and config.require_jwt_typ is True
    config = auth_config(args, {"MCPFAST_AUTH_JWT_TYP": "optional"})
    assert config is not None and config.require_jwt_typ is False


def test_introspection_needs_the_secret_from_the_environment() -> None:
    args = parse(
        "--auth-issuer",
        "https://as.test",
        "--resource-url",
        RESOURCE,
        "--auth-introspection-url",
        "https://as.test/introspect",
        "--auth-client-id",
        "me",
    )
    with pytest.raises(ValueError, match="MCPFAST_AUTH_INTROSPECTION_CLIENT_SECRET"):
        auth_config(args, {})
    config = auth_config(args, {"MCPFAST_AUTH_INTROSPECTION_CLIENT_SECRET": "s"})
    assert config is not None and config.introspection_client_id == "me"
    assert config.introspection_client_secret is None  # read by each worker, not carried


@pytest.mark.parametrize(
    "argv",
    [
        ("--auth-issuer", "https://as.test"),
        ("--resource-url", RESOURCE, "--auth-jwks-url", "https://j"),
        ("--auth-issuer", "x", "--resource-url", RESOURCE, "--auth-dpop", "maybe"),
        ("--auth-issuer", "x", "--resource-url", RESOURCE, "--auth-jwt-typ", "off"),
    ],
)
def test_incomplete_configurations_are_refused(argv: tuple[str, ...]) -> None:
    with pytest.raises(ValueError):
        auth_config(parse(*argv), {})


def test_auth_config_survives_the_trip_to_workers() -> None:
    """workers.py hands the Config over as JSON (MCPFAST_CONFIG)."""
    config = Config(
        auth=AuthConfig(
            issuer="https://as.test", resource=RESOURCE, scope_implies={"a": ["b"]}, dpop_nonce=True
        )
    )
    assert msgspec.json.decode(msgspec.json.encode(config), type=Config) == config


@pytest.mark.parametrize("engine", ["hypercorn", "native"])
async def test_serve_with_two_workers_is_protected(
    auth_server: AuthServer, engine: str, redis_url: str
) -> None:
    port = free_port()
    argv = mcpfast_command(
        "serve",
        "--port",
        str(port),
        "--engine",
        engine,
        "--workers",
        "2",
        "--bus",
        redis_url,
        "--auth-issuer",
        auth_server.issuer,
        "--resource-url",
        RESOURCE,
    )
    env = {"MCPFAST_AUTH_JWKS_URL": auth_server.jwks_url, "MCPFAST_AUTH_SCOPES": "mcp"}
    async with server_process(argv, port, env) as url:
        async with httpx2.AsyncClient(timeout=10) as client:
            token = auth_server.token()
            for _ in range(4):  # new connections: the kernel spreads them over the workers
                async with httpx2.AsyncClient(timeout=10) as fresh:
                    reply = await fresh.post(url, json={})
                assert reply.status_code == 401
                _, params = challenge_params(reply.headers.get_list("www-authenticate")[0])
                assert params["scope"] == "mcp"
                assert params["resource_metadata"] == (
                    "http://mcp.test/.well-known/oauth-protected-resource/mcp"
                )
            response = await client.get(
                url.removesuffix("/mcp") + "/.well-known/oauth-protected-resource/mcp"
            )
            assert response.json()["resource"] == RESOURCE
            from ..helpers import meta

            body = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "hi"}, "_meta": meta()},
            }
            headers = {
                "authorization": f"Bearer {token}",
                "mcp-protocol-version": "2026-07-28",
                "mcp-method": "tools/call",
                "mcp-name": "echo",
                "accept": "application/json, text/event-stream",
            }
            reply = await client.post(url, json=body, headers=headers)
            assert reply.status_code == 200, reply.text
