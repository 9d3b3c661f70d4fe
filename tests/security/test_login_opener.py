"""The login opens only what a person should see: an ``https:`` authorization URL (or
``http:`` to a loopback host), saying the host it opens; an authorization server whose
endpoints have any other scheme (``file:``, ``smb:``, ``javascript:``, a custom URI handler,
``http:`` to a remote host) is refused at discovery with one clear line, and `LoopbackRedirect`
checks again right before it opens anything. The loopback redirect is answered only for the
request's ``state``: another is refused with a 400 page and the wait goes on.

The malicious MCP server is its own authorization server on loopback (`oauth_peers.Hostile`);
``mcpfast inspect`` runs in its own process with a ``$BROWSER`` that only records."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from mcpfast.cli.exits import Exit
from mcpfast.client.oauth import AuthorizationError, LoopbackRedirect

from ..e2e.processes import cli, failure
from .oauth_peers import hostile, recording_browser

REFUSED = [
    ("authorization_endpoint", "file:///tmp/payload.desktop"),
    ("authorization_endpoint", "smb://attacker.example/share/run.lnk"),
    ("authorization_endpoint", "javascript:alert(document.domain)"),
    ("authorization_endpoint", "ms-msdt:/id PCWDiagnostic /skip force"),
    ("authorization_endpoint", "mcpfast-evil://open?x=1"),
    ("authorization_endpoint", "http://attacker.example/authorize"),
    ("token_endpoint", "http://attacker.example/token"),
    ("registration_endpoint", "file:///etc/passwd"),
]


@pytest.mark.parametrize(("name", "value"), REFUSED)
async def test_an_endpoint_of_another_scheme_is_refused_and_nothing_opens(
    tmp_path: Path, name: str, value: str
) -> None:
    opener, opened = recording_browser(tmp_path)
    async with hostile(metadata={name: value}) as server:
        result = await cli(
            "inspect", server.url, BROWSER=str(opener), MCPFAST_STATE_DIR=str(tmp_path)
        )
    assert result.returncode == Exit.NOT_AUTHORIZED, result.stderr
    line = failure(result)
    assert "refused" in line and name in line and "only https:" in line, line
    assert not opened.exists(), opened.read_text()
    assert "opening a browser" not in result.stderr
    assert server.to("/register") == [] and server.to("/token") == []


@pytest.mark.parametrize("endpoint", ["https://as.example/authorize", "loopback"])
async def test_https_and_loopback_http_open_and_say_their_host(
    tmp_path: Path, endpoint: str
) -> None:
    """The browser opens, the host is printed; the redirect with a stale ``state`` is
    answered 400 and ignored, the one with the request's goes on to the token endpoint."""
    opener, opened = recording_browser(tmp_path)
    async with hostile() as server:
        url = server.origin + "/authorize" if endpoint == "loopback" else endpoint
        server.metadata = {"authorization_endpoint": url}
        with trio.fail_after(60):
            result = await cli(
                "inspect", server.url, BROWSER=str(opener), MCPFAST_STATE_DIR=str(tmp_path)
            )
            while "callback 200" not in (opened.read_text() if opened.exists() else ""):
                await trio.sleep(0.05)  # the recorder answers in the background
    host = "as.example" if endpoint != "loopback" else "127.0.0.1"
    assert f"opening a browser at {host} " in result.stderr, result.stderr
    log = opened.read_text().splitlines()
    assert log[0].startswith(f"opened {url}?"), log
    assert log[1:] == ["callback 400", "callback 200"], log
    [exchange] = server.to("/token")  # the right state went on (the server then refused)
    assert b"code=c1" in exchange.body
    assert result.returncode == Exit.NOT_AUTHORIZED
    assert "mcpfast: authorization failed (logging in): token endpoint: HTTP 400 invalid_grant" in (
        result.stderr.splitlines()
    )


async def test_the_opener_checks_the_url_again() -> None:
    """`LoopbackRedirect` refuses to open what discovery would have refused."""
    opened: list[str] = []
    handler = LoopbackRedirect(open_browser=opened.append, timeout=5)
    try:
        for _, value in REFUSED:
            with pytest.raises(AuthorizationError, match="refused to open"):
                await handler(value + "?state=s1")
    finally:
        handler.close()
    assert opened == []
