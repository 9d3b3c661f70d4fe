"""The per-request cost of token verification, in process (no sockets), as bench_dispatch.py
drives the ASGI app: a protected ``tools/call`` (RS256 JWT, JWKS fetched once through the real
verifier code over an in-memory HTTP transport) against the same call unprotected, in one run.

Rows: ``warm`` (the JWKS and the verified token cached: the steady state of a client reusing its
token), ``signature`` (token cache off: every request checks the RS256 signature and claims),
``dpop`` (a DPoP-bound token: warm token cache, but a fresh proof, ES256, verified per request).

    python benches/bench_auth.py [--requests 20000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx2
import trio
from joserfc import jws, jwt
from joserfc.jwk import ECKey, KeySet, RSAKey

sys.path.insert(0, str(Path(__file__).resolve().parent / "servers"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

from mcpfast_echo import server

import mcpfast
from mcpfast.server.auth import JwtVerifier
from mcpfast.server.auth.dpop import ath
from mcpfast.server.config import AuthConfig
from mcpfast.server.keys import KeyRing

KEYS = KeyRing(keys={"k": b"0123456789abcdef0123456789abcdef"}, signing="k")
ISSUER = "https://as.bench"
RESOURCE = "http://127.0.0.1:8000/mcp"
SIGNING = RSAKey.generate_key(2048, parameters={"kid": "k1"})
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
BODY = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "hello"}, "_meta": META},
    }
).encode()


def jwks_transport() -> httpx2.MockTransport:
    document = json.dumps(KeySet([SIGNING]).as_dict(private=False)).encode()
    return httpx2.MockTransport(lambda request: httpx2.Response(200, content=document))


def token(**extra: Any) -> str:
    now = int(time.time())
    claims = {
        "iss": ISSUER,
        "aud": RESOURCE,
        "sub": "bench",
        "scope": "mcp",
        "iat": now,
        "exp": now + 3600,
        **extra,
    }
    return jwt.encode({"alg": "RS256", "kid": "k1"}, claims, SIGNING)


def scope(extra: dict[str, str]) -> dict[str, Any]:
    headers = {
        "host": "127.0.0.1:8000",
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "echo",
        **extra,
    }
    return {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
    }


def protected_app(cache_seconds: float) -> Any:
    verifier = JwtVerifier(
        ISSUER,
        RESOURCE,
        "https://as.bench/jwks",
        cache_seconds=cache_seconds,
        http=httpx2.AsyncClient(transport=jwks_transport()),
    )
    server.token_verifier = verifier
    try:
        config = mcpfast.Config(auth=AuthConfig(issuer=ISSUER, resource=RESOURCE))
        return mcpfast.asgi_app(server, config, keys=KEYS)
    finally:
        server.token_verifier = None


async def drive(app: Any, make_scope: Any, n: int) -> float:
    message = {"type": "http.request", "body": BODY, "more_body": False}
    sent: list[Any] = []

    async def send(event: dict[str, Any]) -> None:
        sent.append(event)

    scopes = [make_scope() for _ in range(n)]  # proofs are made before the clock starts
    start = time.perf_counter()
    for the_scope in scopes:
        feed, receive = trio.open_memory_channel[dict[str, Any]](1)
        feed.send_nowait(message)
        await app(the_scope, receive.receive, send)
    elapsed = time.perf_counter() - start
    assert sent[0]["status"] == 200 and b"hello" in sent[-1]["body"], sent[:2]
    return elapsed / n * 1e6


async def main(args: argparse.Namespace) -> None:
    n = args.requests
    open_app = mcpfast.asgi_app(server, keys=KEYS)
    plain = scope({})
    bearer = scope({"authorization": f"Bearer {token()}"})
    dpop_key = ECKey.generate_key("P-256")
    bound = token(cnf={"jkt": dpop_key.thumbprint()})

    def dpop_scope() -> dict[str, Any]:
        claims = {
            "jti": uuid.uuid4().hex,
            "htm": "POST",
            "htu": RESOURCE,
            "iat": int(time.time()),
            "ath": ath(bound),
        }
        header = {"typ": "dpop+jwt", "alg": "ES256", "jwk": dpop_key.as_dict(private=False)}
        proof = jws.serialize_compact(header, json.dumps(claims).encode(), dpop_key)
        return scope({"authorization": f"DPoP {bound}", "dpop": proof})

    rows = {
        "warm": (protected_app(300.0), lambda: bearer, n),
        "signature": (protected_app(0.0), lambda: bearer, max(n // 10, 500)),
        "dpop": (protected_app(300.0), dpop_scope, max(n // 10, 500)),
    }
    print(f"codec backend: {mcpfast.BACKEND}; {n} requests per warm row")
    for name, (app, make, count) in rows.items():
        await drive(app, make, 200)  # JWKS fetched, caches warm
        await drive(open_app, lambda: plain, 200)
        bases, ours_runs = [], []
        for _ in range(
            args.rounds
        ):  # interleaved, best of each: the machine's noise hits both alike
            bases.append(await drive(open_app, lambda: plain, count))
            ours_runs.append(await drive(app, make, count))
        base, ours = min(bases), min(ours_runs)
        print(
            f"{name:9} unprotected {base:6.1f} us/request   protected {ours:6.1f} us/request   "
            f"cost {ours - base:6.1f} us ({ours / base:.3f}x)"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=7)
    trio.run(main, parser.parse_args())
