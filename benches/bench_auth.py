"""The per-request cost of token verification, in process (no sockets), as bench_dispatch.py
drives the ASGI app: a protected ``tools/call`` (RS256 JWT, JWKS fetched once through the real
verifier code over an in-memory HTTP transport) against the same call unprotected, in one run.

Rows: ``warm`` (the JWKS and the verified token cached: the steady state of a client reusing its
token; the guard's synchronous fast path, `ResourceGuard.warm`), ``signature`` (token cache off: every request checks the RS256 signature and claims),
``dpop`` (a DPoP-bound token: warm token cache, but a fresh proof, ES256, verified per request).
Each row is the best of ``--rounds`` interleaved rounds: wall-clock and CPU microseconds per
request, and the ratio protected / unprotected of the same run.

    python benches/bench_auth.py [--requests 20000] [--rounds 7]

``--native``: over real sockets instead, on the native engine: an unprotected and a protected
copy of the echo server, each in a subprocess of its own (pinned to CPU 0 when ``taskset``
exists; the client on CPU 1), driven in interleaved rounds by the same client loop (httpx2,
``--connections`` keep-alive connections, ``--requests`` modern ``tools/call`` per round). Each
row is the best round: requests/s, and the server's CPU per request (its ``time.process_time()``
before and after the round, asked over a pipe); the ratio is protected / unprotected (the goal:
within 1.10).

    python benches/bench_auth.py --native [--requests 3000] [--rounds 7] [--connections 4]

``--wrk``: the same servers driven by wrk (CPU 1) at full load; each row the median round.

    python benches/bench_auth.py --wrk [--seconds 3] [--rounds 7] [--connections 16]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
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
from mcpfast.server.state.keys import KeyRing

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
    return jwt.encode({"alg": "RS256", "kid": "k1", "typ": "at+jwt"}, claims, SIGNING)


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


async def drive(app: Any, make_scope: Any, n: int) -> tuple[float, float]:
    """``n`` requests through ``app``: wall-clock and CPU microseconds per request."""
    message = {"type": "http.request", "body": BODY, "more_body": False}
    sent: list[Any] = []

    async def send(event: dict[str, Any]) -> None:
        sent.append(event)

    scopes = [make_scope() for _ in range(n)]  # proofs are made before the clock starts
    start, cpu = time.perf_counter(), time.process_time()
    for the_scope in scopes:
        feed, receive = trio.open_memory_channel[dict[str, Any]](1)
        feed.send_nowait(message)
        await app(the_scope, receive.receive, send)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    assert sent[0]["status"] == 200 and b"hello" in sent[-1]["body"], sent[:2]
    return elapsed / n * 1e6, cpu / n * 1e6


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
        base, ours = min(w for w, _ in bases), min(w for w, _ in ours_runs)
        base_cpu, ours_cpu = min(c for _, c in bases), min(c for _, c in ours_runs)
        print(
            f"{name:9} unprotected {base:6.1f} us/request   protected {ours:6.1f} us/request   "
            f"cost {ours - base:6.1f} us ({ours / base:.3f}x; CPU {base_cpu:.1f} -> "
            f"{ours_cpu:.1f} us, {ours_cpu / base_cpu:.3f}x)"
        )


# ------------------------------------------------------------------- the native engine


def _serve_native(port: int, protected: bool) -> None:
    """A server subprocess: the echo server on the native engine (``protected``: its tokens
    verified, RS256, warm cache, as in the ``warm`` row). Prints ``READY <token>`` once
    listening; each line on stdin is answered with this process's CPU seconds."""
    config = mcpfast.Config(port=port, engine="native")
    if protected:
        server.token_verifier = JwtVerifier(
            ISSUER,
            f"http://127.0.0.1:{port}/mcp",
            "https://as.bench/jwks",
            http=httpx2.AsyncClient(transport=jwks_transport()),
        )
        config = mcpfast.Config(
            port=port,
            engine="native",
            auth=AuthConfig(issuer=ISSUER, resource=f"http://127.0.0.1:{port}/mcp"),
        )
    bearer = token(aud=f"http://127.0.0.1:{port}/mcp") if protected else "-"

    def answer_cpu() -> None:
        for _ in sys.stdin:
            sys.stdout.write(f"{time.process_time():.6f}\n")
            sys.stdout.flush()

    async def run() -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(
                lambda task_status: mcpfast.serve(
                    server, config, keys=KEYS, task_status=task_status
                )
            )
            sys.stdout.write(f"READY {bearer}\n")
            sys.stdout.flush()
            threading.Thread(target=answer_cpu, daemon=True).start()

    trio.run(run)


class NativeServer:
    """A `_serve_native` subprocess: its URL, its token and its CPU seconds on demand."""

    def __init__(self, protected: bool) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        argv = [sys.executable, __file__, "--serve", str(self.port)]
        if protected:
            argv.append("--protected")
        if shutil.which("taskset") and (os.cpu_count() or 1) > 1:
            argv = ["taskset", "-c", "0", *argv]
        self.process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("READY "):
            raise RuntimeError(f"the server did not start: {line!r}")
        bearer = line.split()[1]
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tools/call",
            "mcp-name": "echo",
        }
        if protected:
            self.headers["authorization"] = f"Bearer {bearer}"

    def cpu(self) -> float:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("\n")
        self.process.stdin.flush()
        return float(self.process.stdout.readline())

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


async def _round(
    target: NativeServer, headers: dict[str, str], http: httpx2.AsyncClient, n: int, tasks: int
) -> float:
    """``n`` ``tools/call`` over ``tasks`` concurrent keep-alive connections: seconds taken."""
    left = n

    async def worker() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            response = await http.post(target.url, content=BODY, headers=headers)
            if response.status_code != 200 or b"hello" not in response.content:
                raise RuntimeError(f"HTTP {response.status_code}: {response.content[:200]!r}")

    start = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for _ in range(tasks):
            nursery.start_soon(worker)
    return time.perf_counter() - start


def _rows(
    plain: NativeServer, protected: NativeServer
) -> dict[str, tuple[NativeServer, dict[str, str]]]:
    """The three rows: "token sent" sends the protected row's Authorization header to the
    unprotected server (what a bigger request costs apart from verifying it)."""
    return {
        "unprotected": (plain, plain.headers),
        "token sent": (
            plain,
            {**plain.headers, "authorization": protected.headers["authorization"]},
        ),
        "protected": (protected, protected.headers),
    }


def saturated(args: argparse.Namespace) -> None:
    """``--wrk``: the same three rows driven by wrk (CPU 1) at ``--connections``, the server
    saturated: what verification costs at full load, where per-request wake-ups no longer
    inflate the baseline as they do under the Python client."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_http import run_wrk

    plain, protected = NativeServer(False), NativeServer(True)
    rows = _rows(plain, protected)
    body = BODY.replace(b'"hello"', b'"hello bench"')  # what run_wrk checks in every answer
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in rows}
    try:
        for target, headers in rows.values():
            run_wrk(target.url, body, headers, args.connections, 1)  # warm
        for _ in range(args.rounds):
            for name, (target, headers) in rows.items():
                before = target.cpu()
                done = run_wrk(target.url, body, headers, args.connections, args.seconds)
                cpu = target.cpu() - before
                if done["errors"] or done["mismatched"]:
                    raise RuntimeError(f"{name}: {done['errors']} errors, {done['mismatched']}")
                results[name].append((done["rps"], cpu / done["requests"] * 1e6))
    finally:
        plain.stop()
        protected.stop()
    print(
        f"native engine, codec {mcpfast.BACKEND}; wrk c={args.connections}, {args.seconds:g} s "
        f"rounds, median of {args.rounds} interleaved rounds"
    )
    report({name: _median(rows) for name, rows in results.items()})


def _median(rows: list[tuple[float, float]]) -> tuple[float, float]:
    ordered = sorted(rows)
    middle = ordered[len(ordered) // 2]
    cpus = sorted(c for _, c in rows)
    return middle[0], cpus[len(cpus) // 2]


def report(best: dict[str, tuple[float, float]]) -> None:
    """Print the rows and the ratio protected / unprotected."""
    for name, (rps, cpu) in best.items():
        print(f"{name:12} {rps:8.0f} requests/s   server CPU {cpu:6.1f} us/request")
    (open_rps, open_cpu), (ours_rps, ours_cpu) = best["unprotected"], best["protected"]
    sent_cpu = best["token sent"][1]
    print(
        f"protected / unprotected: server CPU {ours_cpu / open_cpu:.3f}x "
        f"(+{ours_cpu - open_cpu:.1f} us: {sent_cpu - open_cpu:+.1f} us carrying the header, "
        f"{ours_cpu - sent_cpu:+.1f} us verifying it), throughput {ours_rps / open_rps:.3f}x"
    )


async def native(args: argparse.Namespace) -> None:
    n, tasks = args.requests, args.connections
    if shutil.which("taskset") and (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {1})  # the servers are on CPU 0
    plain, protected = NativeServer(False), NativeServer(True)
    rows = _rows(plain, protected)
    limits = httpx2.Limits(max_connections=tasks, max_keepalive_connections=tasks)
    try:
        clients = {name: httpx2.AsyncClient(timeout=30, limits=limits) for name in rows}
        for name, (target, headers) in rows.items():
            await _round(target, headers, clients[name], 300, tasks)  # JWKS fetched, caches warm
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in rows}
        for _ in range(args.rounds):  # interleaved: the machine's noise hits all alike
            for name, (target, headers) in rows.items():
                before = target.cpu()
                seconds = await _round(target, headers, clients[name], n, tasks)
                cpu = target.cpu() - before
                results[name].append((n / seconds, cpu / n * 1e6))
        for client in clients.values():
            await client.aclose()
    finally:
        plain.stop()
        protected.stop()
    print(
        f"native engine, codec {mcpfast.BACKEND}; {n} tools/call per round, {tasks} "
        f"connections, best of {args.rounds} interleaved rounds"
    )
    report(
        {name: (max(r for r, _ in rows), min(c for _, c in rows)) for name, rows in results.items()}
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--native", action="store_true", help="over sockets, native engine")
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--wrk", action="store_true", help="native engine, driven by wrk")
    parser.add_argument("--seconds", type=float, default=3.0, help="with --wrk: per round")
    parser.add_argument("--serve", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--protected", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.serve is not None:
        _serve_native(arguments.serve, arguments.protected)
    elif arguments.wrk:
        saturated(arguments)
    elif arguments.native:
        arguments.requests = arguments.requests or 3000
        trio.run(native, arguments)
    else:
        arguments.requests = arguments.requests or 20000
        trio.run(main, arguments)
