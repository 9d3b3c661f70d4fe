"""DPoP replay protection cannot be turned against others (RFC 9449 section 11.1), both engines,
tokens bound by the development authorization server: a proof is recorded only once its key is
the token's, so a token stolen without its key records nothing; one key's proofs fill only its
own quota (`LocalBus(max_claims_per_owner=...)`); with a Redis bus a captured request is
accepted by one worker only, and while Redis is away DPoP requests are refused with 503."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import httpx2
import trio
from joserfc import jws
from joserfc.jwk import ECKey

from mcpfast.auth.devserver import DevAuthorizationServer
from mcpfast.server.auth.dpop import ath
from mcpfast.server.state.local_bus import LocalBus
from mcpfast.server.state.redis_bus import RedisBus

from ..e2e.processes import free_port, mcpfast_command, server_process
from ..helpers import MODERN, Reply, Wire, meta
from ..redis_server import RedisServer
from .conftest import RESOURCE, protected, subject_server

QUOTA = 4
"""The proofs one key may have recorded in the window (`LocalBus(max_claims_per_owner=)`)."""


def new_key() -> ECKey:
    return ECKey.generate_key("P-256", private=True)


def proof(key: ECKey, token: str, url: str = RESOURCE, jti: str | None = None) -> str:
    """A DPoP proof of ``key`` for a POST to ``url`` carrying ``token``."""
    claims = {
        "jti": jti or uuid.uuid4().hex,
        "htm": "POST",
        "htu": url,
        "iat": int(time.time()),
        "ath": ath(token),
    }
    header = {"typ": "dpop+jwt", "alg": "ES256", "jwk": key.as_dict(private=False)}
    return jws.serialize_compact(header, json.dumps(claims).encode(), key, algorithms=["ES256"])


BODY = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "whoami", "arguments": {}, "_meta": meta(None)},
}


def headers(token: str, dpop: str | None) -> dict[str, str]:
    """What a client sends with a bound ``token`` and the proof ``dpop``."""
    sent = {
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": "whoami",
        "authorization": f"DPoP {token}",
    }
    if dpop is not None:
        sent["dpop"] = dpop
    return sent


async def call(wire: Wire, token: str, dpop: str | None) -> Reply:
    reply: Reply = await wire.post(BODY, headers(token, dpop))
    return reply


def accepted(reply: Reply, subject: str) -> bool:
    return reply.status == 200 and reply.result["content"][0]["text"] == subject


def refused(reply: Reply, error: str) -> bool:
    challenge = reply.headers.get("www-authenticate", "")
    return reply.status == 401 and f'error="{error}"' in challenge


class Holder:
    """A principal with a DPoP key and a token the authorization server bound to it."""

    def __init__(self, dev: DevAuthorizationServer, subject: str) -> None:
        self.subject = subject
        self.key = new_key()
        self.token = dev.mint(subject, scope="mcp", audience=RESOURCE, jkt=self.key.thumbprint())

    async def call(self, wire: Wire, jti: str | None = None) -> Reply:
        return await call(wire, self.token, proof(self.key, self.token, jti=jti))


async def test_proofs_of_other_keys_than_the_tokens_record_nothing(
    engine: str, dev: DevAuthorizationServer
) -> None:
    """A token without its key: proofs of another key are refused before anything is recorded,
    so that key's own proofs (same ``jti``) still pass with its own token."""
    alice = Holder(dev, "alice")
    mallory = Holder(dev, "mallory")
    async with protected(subject_server("dpop", bus=LocalBus()), engine, dev) as (_, wire):
        stolen = await call(wire, alice.token, proof(mallory.key, alice.token, jti="j-1"))
        assert refused(stolen, "invalid_token"), stolen.response.text
        assert accepted(await mallory.call(wire, jti="j-1"), "mallory")
        assert refused(await mallory.call(wire, jti="j-1"), "invalid_dpop_proof")


async def test_a_stolen_token_without_its_key_never_locks_its_holder_out(
    engine: str, dev: DevAuthorizationServer
) -> None:
    """Flooding proofs of many keys with Alice's token (its ``ath``, not her key) fills no
    memory: Alice uses her whole quota afterwards, and Bob his."""
    alice, bob = Holder(dev, "alice"), Holder(dev, "bob")
    bus = LocalBus(max_claims_per_owner=QUOTA)
    async with protected(subject_server("dpop", bus=bus), engine, dev) as (_, wire):
        for _ in range(4 * QUOTA):
            flood = await call(wire, alice.token, proof(new_key(), alice.token))
            assert refused(flood, "invalid_token"), flood.response.text
        for _ in range(QUOTA):
            assert accepted(await alice.call(wire), "alice")
            assert accepted(await bob.call(wire), "bob")


async def test_a_key_that_fills_its_quota_is_refused_alone(
    engine: str, dev: DevAuthorizationServer
) -> None:
    """Mallory, with a valid bound token of his own, sends proofs past his quota: he is refused
    (until his proofs expire), Alice is not, before or after."""
    alice, mallory = Holder(dev, "alice"), Holder(dev, "mallory")
    bus = LocalBus(max_claims_per_owner=QUOTA)
    async with protected(subject_server("dpop", bus=bus), engine, dev) as (_, wire):
        assert accepted(await alice.call(wire), "alice")
        for _ in range(QUOTA):
            assert accepted(await mallory.call(wire), "mallory")
        for _ in range(3):
            assert refused(await mallory.call(wire), "invalid_dpop_proof")
        for _ in range(QUOTA - 1):
            assert accepted(await alice.call(wire), "alice")


@asynccontextmanager
async def two_workers(
    engine: str, dev: DevAuthorizationServer, redis_url: str
) -> AsyncIterator[list[Wire]]:
    """Two servers of one resource sharing ``redis_url`` (as ``serve --bus`` workers do)."""
    async with AsyncExitStack() as stack:
        wires = []
        for _ in range(2):
            server = subject_server("dpop", bus=RedisBus(redis_url))
            _, wire = await stack.enter_async_context(protected(server, engine, dev))
            wires.append(wire)
        yield wires


async def both(wires: list[Wire], token: str, dpop: str) -> list[Reply]:
    """The same request (``token``, the proof ``dpop``, the body) sent to every wire at once."""
    replies: list[Reply] = []

    async def send(wire: Wire) -> None:
        replies.append(await call(wire, token, dpop))

    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            for wire in wires:
                nursery.start_soon(send, wire)
    return replies


async def test_a_captured_request_is_accepted_by_one_worker_only(
    engine: str, dev: DevAuthorizationServer, redis_url: str
) -> None:
    """The same request (token, proof, body) sent at once to two workers sharing a Redis: one
    accepts it, the other refuses the replay; again for several proofs."""
    alice = Holder(dev, "alice")
    async with two_workers(engine, dev, redis_url) as wires:
        for _ in range(5):
            replies = await both(wires, alice.token, proof(alice.key, alice.token))
            assert sorted(r.status for r in replies) == [200, 401], [r.status for r in replies]
            assert sum(accepted(r, "alice") for r in replies) == 1
            assert sum(refused(r, "invalid_dpop_proof") for r in replies) == 1


WORKER = """
import mcpfast
from mcpfast import Context

server = mcpfast.Server("dpop-worker")


@server.tool()
def whoami(ctx: Context) -> str:
    assert ctx.auth is not None
    return str(ctx.auth.subject)
"""


async def test_two_serve_processes_on_one_redis_accept_a_captured_request_once(
    engine: str, dev: DevAuthorizationServer, redis_url: str, tmp_path: Path
) -> None:
    """``mcpfast serve --bus redis://`` twice (what ``--workers`` and other hosts run): the
    same captured request sent to both processes at once is accepted by one."""
    (tmp_path / "dpop_worker.py").write_text(WORKER)
    alice = Holder(dev, "alice")
    async with AsyncExitStack() as stack:
        wires = []
        for _ in range(2):
            port = free_port()
            argv = mcpfast_command(
                "serve", "dpop_worker:server", "--port", str(port), "--engine", engine,
                "--bus", redis_url, "--auth-issuer", dev.issuer, "--resource-url", RESOURCE,
                "--auth-jwks-url", dev.jwks_uri, "--auth-scopes", "mcp",
            )  # fmt: skip
            url = await stack.enter_async_context(server_process(argv, port, cwd=tmp_path))
            http = await stack.enter_async_context(httpx2.AsyncClient(timeout=10))
            wires.append(Wire(http, url))
        for _ in range(3):
            replies = await both(wires, alice.token, proof(alice.key, alice.token))
            assert sorted(r.status for r in replies) == [200, 401], [r.status for r in replies]
            assert sum(accepted(r, "alice") for r in replies) == 1


async def test_without_redis_dpop_requests_are_refused_with_503(
    engine: str, dev: DevAuthorizationServer, redis_server: RedisServer
) -> None:
    """Redis away: a proof cannot be checked against the other workers' records, so a DPoP
    request is refused (503, ``Retry-After``) rather than accepted; a plain bearer token, which
    needs no record, is still served."""
    alice = Holder(dev, "alice")
    bearer = dev.mint("bob", scope="mcp", audience=RESOURCE)
    server = subject_server("dpop", bus=RedisBus(redis_server.url))
    async with protected(server, engine, dev) as (_, wire):
        assert accepted(await alice.call(wire), "alice")
        redis_server.stop()
        reply = await alice.call(wire)
        assert reply.status == 503 and reply.headers.get("retry-after"), reply.response.text
        plain = await wire.modern(
            "tools/call",
            {"name": "whoami", "arguments": {}},
            headers={"authorization": f"Bearer {bearer}"},
        )
        assert accepted(plain, "bob"), plain.response.text
        redis_server.start()
        with trio.fail_after(10):
            while (reply := await alice.call(wire)).status == 503:
                await trio.sleep(0.05)
        assert accepted(reply, "alice"), reply.response.text
