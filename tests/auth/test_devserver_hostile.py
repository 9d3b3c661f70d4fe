"""Hostile input to the development authorization server: every answer is a 4xx with an
RFC 6749 §5.2 error (never a 500): huge bodies, malformed forms, JSON and credentials,
repeated parameters, wrong methods, random bytes. Also the CLI and the conformance script."""

from __future__ import annotations

import base64
import os
import random
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlencode

import httpx2
import pytest
import trio

from mcpfast.auth import DevAuthorizationServer, dev_authorization_server

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
FORM = {"content-type": "application/x-www-form-urlencoded"}


@pytest.fixture
async def server() -> AsyncIterator[DevAuthorizationServer]:
    async with dev_authorization_server() as running:
        running.register_client("svc", secret="s")
        yield running


def error_of(answer: httpx2.Response) -> str:
    assert answer.headers["content-type"] == "application/json", answer.text
    return str(answer.json()["error"])


async def test_huge_bodies(server: DevAuthorizationServer, http: httpx2.AsyncClient) -> None:
    big = b"a=" + b"x" * (1 << 20)
    answer = await http.post(server.token_endpoint, content=big, headers=FORM)
    assert answer.status_code == 413 and error_of(answer) == "invalid_request"

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted as it comes
        for _ in range(64):
            yield b"{" + b" " * 16383

    answer = await http.post(
        server.registration_endpoint,
        content=chunks(),
        headers={"content-type": "application/json"},
    )
    assert answer.status_code == 413


async def test_malformed_forms(server: DevAuthorizationServer, http: httpx2.AsyncClient) -> None:
    for body, content_type in (
        (b"\xff\xfe\x00", FORM["content-type"]),
        (b"grant_type=%ff%fe", FORM["content-type"]),
        (b"&".join(b"a%d=1" % i for i in range(500)), FORM["content-type"]),
        (b"grant_type=client_credentials&grant_type=client_credentials", FORM["content-type"]),
        (b'{"grant_type": "client_credentials"}', "application/json"),
        (b"grant_type=client_credentials", ""),
        (b"", FORM["content-type"]),
        (b"grant_type=" + b"x" * 9000, FORM["content-type"]),
    ):
        headers = {"content-type": content_type} if content_type else {}
        answer = await http.post(
            server.token_endpoint, content=body, headers=headers, auth=("svc", "s")
        )
        assert answer.status_code == 400, body[:60]
        assert error_of(answer) == "invalid_request", body[:60]
    unsupported = await http.post(
        server.token_endpoint, data={"grant_type": "password"}, auth=("svc", "s")
    )
    assert unsupported.status_code == 400 and error_of(unsupported) == "unsupported_grant_type"
    for scope, error in (("mcp:read\x01", "invalid_scope"), ("a" * 300, "invalid_scope")):
        answer = await http.post(
            server.token_endpoint,
            data={"grant_type": "client_credentials", "scope": scope},
            auth=("svc", "s"),
        )
        assert answer.status_code == 400 and error_of(answer) == error
    many = [("grant_type", "client_credentials")] + [
        ("resource", f"https://r{i}.example/") for i in range(11)
    ]
    answer = await http.post(
        server.token_endpoint,
        content=urlencode(many),
        headers=FORM,
        auth=("svc", "s"),
    )
    assert answer.status_code == 400 and error_of(answer) == "invalid_target"
    no_token = await http.post(server.introspection_endpoint, data={}, auth=("svc", "s"))
    assert no_token.status_code == 400 and error_of(no_token) == "invalid_request"


async def test_malformed_credentials(
    server: DevAuthorizationServer, http: httpx2.AsyncClient
) -> None:
    form = {"grant_type": "client_credentials"}
    for authorization in (
        "Basic !!!",
        "Basic " + base64.b64encode(b"no-colon").decode(),
        "Basic " + base64.b64encode(b"\xff\xfe:x").decode(),
        "Basic " + base64.b64encode(b"svc:").decode(),
        "Basic",
        "Bearer abc",
    ):
        answer = await http.post(
            server.token_endpoint, data=form, headers={"authorization": authorization}
        )
        assert answer.status_code == 401, authorization
        assert error_of(answer) == "invalid_client", authorization
    for assertion in ("x", "a.b.c", "e30.e30.e30", "." * 3 + "x" * 10000):
        answer = await http.post(
            server.token_endpoint,
            data={
                **form,
                "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                "client_assertion": assertion,
            },
        )
        assert answer.status_code in (400, 401) and error_of(answer) in (
            "invalid_client",
            "invalid_request",
        )


async def test_malformed_registrations(
    server: DevAuthorizationServer, http: httpx2.AsyncClient
) -> None:
    json = {"content-type": "application/json"}
    for body in (
        b"{",
        b"[" * 50_000,
        b'"a string"',
        b"null",
        b'{"redirect_uris": ["http://127.0.0.1/cb"], "client_name": 5}',
        b'{"redirect_uris": ["http://127.0.0.1/cb"], "client_name": "' + b"n" * 5000 + b'"}',
        b'{"redirect_uris": [' + b",".join([b'"https://a.example/cb"'] * 100) + b"]}",
        b'{"redirect_uris": [5]}',
        b'{"redirect_uris": ["https://a.example:99999/cb"]}',
        b'{"redirect_uris": ["http://127.0.0.1/cb"], "jwks": {"keys": "nope"}}',
        b'{"redirect_uris": ["http://127.0.0.1/cb"], "jwks_uri": "http://evil.example/jwks"}',
        b'{"redirect_uris": ["http://127.0.0.1/cb"], "application_type": "robot"}',
        b"\xff\xfe",
    ):
        answer = await http.post(server.registration_endpoint, content=body, headers=json)
        assert answer.status_code == 400, body[:60]
        assert error_of(answer) in ("invalid_client_metadata", "invalid_redirect_uri")
    form = await http.post(server.registration_endpoint, data={"redirect_uris": "x"})
    assert form.status_code == 400


async def test_malformed_authorization_requests(
    server: DevAuthorizationServer, http: httpx2.AsyncClient
) -> None:
    for query in (
        "",
        "client_id=%ff",
        "client_id=svc&client_id=svc",
        "client_id=" + "x" * 9000,
        "&".join(f"p{i}=1" for i in range(200)),
        "client_id=https%3A%2F%2F",
        "client_id=http%3A%2F%2F10.0.0.1%2Fclient.json",  # not loopback: no fetch
    ):
        answer = await http.get(f"{server.authorization_endpoint}?{query}")
        assert answer.status_code == 400, query[:60]
        assert "location" not in answer.headers
    huge = await http.get(f"{server.authorization_endpoint}?client_id={'x' * 40000}")
    assert 400 <= huge.status_code < 500


async def test_routes(server: DevAuthorizationServer, http: httpx2.AsyncClient) -> None:
    assert (await http.get(f"{server.issuer}/nope")).status_code == 404
    wrong = await http.get(server.token_endpoint)
    assert wrong.status_code == 405 and wrong.headers["allow"] == "POST"
    assert (await http.delete(server.registration_endpoint)).status_code == 405
    assert (await http.post(server.jwks_uri)).status_code == 405
    head = await http.head(f"{server.issuer}/.well-known/oauth-authorization-server")
    assert head.status_code == 200


async def test_random_bytes_never_500(
    server: DevAuthorizationServer, http: httpx2.AsyncClient
) -> None:
    rng = random.Random(7)
    paths = ["/token", "/register", "/introspect", "/revoke", "/authorize"]
    types = [FORM["content-type"], "application/json", "text/plain", ""]
    for _ in range(150):
        size = rng.choice([0, 1, 10, 200, 5000])
        body = bytes(rng.getrandbits(8) for _ in range(size))
        if rng.random() < 0.5:
            body = b"&".join(
                b"%s=%s"
                % (
                    rng.choice([b"grant_type", b"code", b"token", b"client_id", b"scope"]),
                    body[:50],
                )
                for _ in range(3)
            )
        content_type = rng.choice(types)
        headers = {"content-type": content_type} if content_type else {}
        if rng.random() < 0.3:
            headers["dpop"] = base64.urlsafe_b64encode(body[:100]).decode() + ".e30.x"
        if rng.random() < 0.3:
            headers["authorization"] = "Basic " + base64.b64encode(body[:30] or b"?").decode()
        answer = await http.post(server.issuer + rng.choice(paths), content=body, headers=headers)
        assert 200 <= answer.status_code < 500, (answer.status_code, body[:40])


def test_cli_banner_and_shutdown() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO / "python")}
    process = subprocess.Popen(
        [sys.executable, "-m", "mcpfast", "auth-server", "--port", "0", "--client", "app:pw"],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stderr is not None
    lines = []
    try:
        for line in process.stderr:
            lines.append(line)
            if "serving at" in line:
                break
        text = "".join(lines)
        assert "DEVELOPMENT ONLY" in text
        assert "client    app (confidential)" in text
        issuer = text.rsplit("serving at ", 1)[1].strip()
        meta = httpx2.get(issuer + "/.well-known/oauth-authorization-server", timeout=5)
        assert meta.json()["issuer"] == issuer
        token = httpx2.post(
            issuer + "/token", data={"grant_type": "client_credentials"}, auth=("app", "pw")
        )
        assert token.status_code == 200
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=10) == 0


def test_conformance_authorization_server_scenarios(tmp_path: Path) -> None:
    shared = Path(os.environ.get("MCPFAST_SHARED", REPO.parent / "shared"))
    if not (shared / "conformance" / "conformance").exists() or shutil.which("node") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("the conformance bundle and node are required under CI=true")
        pytest.skip("the conformance bundle (MCPFAST_SHARED) or node is missing")
    done = subprocess.run(
        [
            str(REPO / "tests" / "conformance" / "run_auth_server.sh"),
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=150,
        env={**os.environ, "PYTHON": sys.executable},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Total: 3 passed, 0 failed" in done.stdout


async def test_cancelling_the_context_manager_closes_the_port() -> None:
    async with dev_authorization_server() as server:
        issuer = server.issuer
    with pytest.raises(httpx2.ConnectError):
        async with httpx2.AsyncClient(timeout=2) as http:
            await http.get(issuer + "/jwks")
    await trio.lowlevel.checkpoint()


def test_cli_port_in_use() -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "mcpfast", "auth-server", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=30,
            env={**os.environ, "PYTHONPATH": str(REPO / "python")},
        )
    assert done.returncode == 6
    assert "cannot listen on 127.0.0.1" in done.stderr
