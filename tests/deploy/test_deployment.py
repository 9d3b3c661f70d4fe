"""One service across hosts, deployed as users deploy it: two hosts (loopback addresses of their
own), each ``mcpfast serve --workers 2 --bus redis://...`` with shared keys, one real Redis, behind
a real nginx or a real haproxy (``deploy/``), no sticky sessions, on either engine. Through the
proxy at once: a steady stateless load of ``tools/call record`` (each execution is a line of a
shared ledger); the mcpfast client in a legacy session subscribed over its GET stream; the mcpfast
client in 2026-07-28 with a ``subscriptions/listen`` stream and an ``input_required`` round; the
official SDK's and FastMCP's clients in legacy sessions (they keep their first session id: log
level ``info``, elicitation). The faults, one after the other: SIGTERM of a host (a drain, then
a restart), SIGKILL of a whole host (then a restart), Redis frozen 5 s, Redis killed and
restarted empty.

What must hold, and is printed check by check: a request acknowledged ran exactly once; none ran
twice; mcpfast's own refusal (503, ``Retry-After``) only for work not done; no request refused by
the proxy itself; errors only inside a fault's window (which ends when every host's bus is
healthy again); the drain ends within its bound; after every fault, every session and stream
still delivers and keeps its state; no client spoke anything but HTTP to the proxy."""

from __future__ import annotations

import base64
import contextlib
import json
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
import trio

import mcpfast

from ..helpers import Requests
from ..redis_server import RedisServer
from .fastmcp_session import FastMcpSession
from .harness import BOUND, HOST_ADDRESSES, Host, Outcomes, Proxy
from .sdk import SdkSession

pytestmark = [
    pytest.mark.serial,  # two hosts of two workers, a proxy and a load: the machine to itself
    pytest.mark.xdist_group("busiest"),  # one at a time (tests/e2e/conftest.py: BUSIEST)
    # the SDK's legacy logging/setLevel, deprecated by 2026-07-28 (SEP-2577), is what it runs
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

KEYS = "d1:" + base64.urlsafe_b64encode(b"deployment-test-signing-key-32b!").decode()
STATUS = "deploy://status"
"""The resource the session subscribes to (`app.STATUS`)."""
DELIVERY = 10.0
"""How long a resource update may take to reach the subscribed session (through the proxy,
after a fault the GET stream has to be opened again)."""
DRAIN = 15.0
"""The drain's bound: Config.graceful_seconds (10 s) and the exit."""

SETTLE = 2.0
"""After the load stops, how long a host may take to close what its clients left."""
FD_SLACK = 32
"""Descriptors a host may hold above its warm count at the end: the proxy's pool of kept-alive
upstream connections (nginx ``keepalive 32``) may be fuller."""
RSS_SLACK = 1.1
"""The resident memory a host may reach at the end, against its warm value (~210 MiB for a
parent and two workers, which grow ~2 MiB over a run): a bound that catches a leak of ~2 KiB per
request over the run's ~10,000 (the soak, loadtests/soak.py, measures memory finely)."""

Check = tuple[str, bool, str]


async def _load(
    http: httpx2.AsyncClient, url: str, outcomes: Outcomes, worker: str, stop: trio.Event
) -> None:
    """Stateless ``record`` calls, one after the other, until ``stop``: each outcome by key."""
    requests = Requests()
    n = 0
    while not stop.is_set():
        n += 1
        key = f"{worker}-{n}"
        body, mirrored = requests.modern_body(
            "tools/call", {"name": "record", "arguments": {"key": key}}
        )
        headers = {k: v for k, v in mirrored.items() if v is not None}
        headers |= {"content-type": "application/json", "accept": "application/json"}
        outcomes.when[key] = time.monotonic()
        try:
            response = await http.post(url, content=json.dumps(body).encode(), headers=headers)
        except httpx2.HTTPError as exc:
            outcomes.seen[key] = f"error {type(exc).__name__}"
            outcomes.done[key] = time.monotonic()
            await trio.sleep(0.05)
            continue
        outcomes.seen[key] = _outcome(response, key)
        outcomes.done[key] = time.monotonic()
        if outcomes.seen[key] != "ok":
            await trio.sleep(0.05)


def _outcome(response: httpx2.Response, key: str) -> str:
    try:
        reply: Any = response.json()
    except ValueError:
        return f"proxy {response.status_code}"
    if response.status_code == 503 and "retry-after" in response.headers:
        return "refused"
    result = reply.get("result") if isinstance(reply, dict) else None
    if response.status_code == 200 and isinstance(result, dict):
        content = result.get("content") or [{}]
        return "ok" if content[0].get("text") == key else f"error {content[0]}"
    return f"error {response.status_code}"


async def _touch(http: httpx2.AsyncClient, url: str) -> bool:
    """Ask (any host, statelessly) to announce a change of `STATUS`; whether it was answered."""
    body, mirrored = Requests().modern_body("tools/call", {"name": "touch", "arguments": {}})
    headers = {k: v for k, v in mirrored.items() if v is not None}
    headers |= {"content-type": "application/json", "accept": "application/json"}
    try:
        response = await http.post(url, content=json.dumps(body).encode(), headers=headers)
    except httpx2.HTTPError:
        return False
    return response.status_code == 200


async def _delivered(
    http: httpx2.AsyncClient, url: str, updates: list[float], since: float
) -> float | None:
    """Touch `STATUS` until the session hears an update sent after ``since``: seconds taken, or
    None past `DELIVERY`."""
    with trio.move_on_after(DELIVERY):
        while True:
            if any(at >= since for at in updates):
                return time.monotonic() - since
            await _touch(http, url)
            await trio.sleep(0.25)
    return None


def _growth(warm: tuple[int, int], end: tuple[int, int]) -> Check:
    """No descriptor or memory growth on a host from its warm state (its clients, streams and
    the proxy's kept-alive connections open) through three faults and the load to the end."""
    (fds, rss), (fds_end, rss_end) = warm, end
    held = fds_end <= fds + FD_SLACK and rss_end <= rss * RSS_SLACK
    detail = f"descriptors {fds} -> {fds_end}, resident {rss // 1024} -> {rss_end // 1024} MiB"
    return ("no descriptor or memory growth on a host (warm to end)", held, detail)


async def _name(params: dict[str, Any]) -> dict[str, Any]:
    """The modern client's answer to the ``ask`` tool's elicitation (an input_required round)."""
    return {"action": "accept", "content": {"name": "Lin"}}


async def _whole(http: httpx2.AsyncClient, hosts: list[Host]) -> float | None:
    """Until every host's bus health (``/busz``) answers 200: the seconds it took, or None past
    `BOUND` (a fault's window ends when the service is whole again)."""
    start = time.monotonic()
    with trio.move_on_after(BOUND):
        for host in hosts:
            while True:
                try:
                    response = await http.get(f"http://{host.upstream}/busz", timeout=2)
                    if response.status_code == 200:
                        break
                except httpx2.HTTPError:
                    pass
                await trio.sleep(0.1)
        return time.monotonic() - start
    return None


async def _scenario(
    proxy: Proxy, hosts: list[Host], redis: RedisServer, outcomes: Outcomes
) -> list[Check]:
    checks: list[Check] = []
    updates: list[float] = []
    listened: list[float] = []

    def heard(method: str, params: dict[str, Any]) -> None:
        if method == "notifications/resources/updated" and params.get("uri") == STATUS:
            updates.append(time.monotonic())

    async def subscription(phase: str) -> None:
        for what, heard_at in (("the session's subscription", updates), ("the listen", listened)):
            took = await _delivered(http, proxy.url, heard_at, time.monotonic())
            shown = "never" if took is None else f"{took:.2f}s"
            checks.append((f"{phase}: {what} delivers", took is not None, shown))
        answered = False
        with trio.move_on_after(DELIVERY):
            with contextlib.suppress(mcpfast.MCPError, httpx2.HTTPError):
                result = await modern.call_tool("ask", {})
                answered = "hello Lin" in json.dumps(result, default=str)
        checks.append((f"{phase}: a 2026-07-28 input_required round trip", answered, "ask"))

    async def listen(task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with modern.listen(resource_uris=[STATUS]) as events:
            task_status.started()
            async for event in events:
                if event.get("method") == "notifications/resources/updated":
                    listened.append(time.monotonic())

    async def sdk_session(phase: str) -> None:
        for name, peer in (("the SDK", sdk), ("FastMCP", fast)):
            logged, answered = await peer.check()
            checks.append((f"{phase}: {name}'s session keeps its log level", logged, "info log"))
            checks.append((f"{phase}: {name}'s elicitation is answered", answered, "ask"))

    async def recovered(phase: str, began: float) -> None:
        took = await _whole(http, hosts)
        outcomes.faults.append((began, time.monotonic()))
        shown = "never" if took is None else f"{took:.2f}s after the fault ended"
        checks.append((f"{phase}: every host's bus is healthy again", took is not None, shown))

    async def subscription_and_sdk(phase: str) -> None:
        await subscription(phase)
        await sdk_session(phase)

    stop = trio.Event()
    async with (
        httpx2.AsyncClient(timeout=BOUND) as http,
        mcpfast.connect(proxy.url, era="legacy", on_notification=heard, timeout=BOUND) as client,
        mcpfast.connect(proxy.url, era="modern", on_elicit=_name, timeout=BOUND) as modern,
        SdkSession(proxy.url) as sdk,
        FastMcpSession(proxy.url) as fast,
        trio.open_nursery() as nursery,
    ):
        await client.subscribe(STATUS)
        await nursery.start(listen)
        for i in range(3):
            nursery.start_soon(_load, http, proxy.url, outcomes, f"w{i}", stop)
        await subscription_and_sdk("before any fault")

        began = time.monotonic()
        hosts[0].signal(signal.SIGTERM)
        took = await hosts[0].exited()
        checks.append(("SIGTERM: the host drains and exits in bound", took < DRAIN, f"{took:.1f}s"))
        await hosts[0].start()
        await recovered("after the drain", began)
        await subscription_and_sdk("after the drain")
        warm = hosts[0].resources()  # the restarted host, serving everything, from here on

        began = time.monotonic()
        hosts[1].signal(signal.SIGKILL)
        await hosts[1].exited()
        await trio.sleep(1)
        await hosts[1].start()
        await recovered("after a whole host was killed", began)
        await subscription_and_sdk("after a whole host was killed")

        assert redis.process is not None
        began = time.monotonic()
        redis.process.send_signal(signal.SIGSTOP)
        await trio.sleep(5)
        redis.process.send_signal(signal.SIGCONT)
        await recovered("after Redis was frozen 5 s", began)
        await subscription_and_sdk("after Redis was frozen 5 s")

        began = time.monotonic()
        redis.stop()
        redis.start()
        await recovered("after Redis restarted empty", began)
        await subscription_and_sdk("after Redis restarted empty")
        stop.set()
        await trio.sleep(SETTLE)
        checks.append(_growth(warm, hosts[0].resources()))
        nursery.cancel_scope.cancel()  # the listen; the load ends with its current request
    return checks


def _ledger_checks(outcomes: Outcomes) -> list[Check]:
    runs = outcomes.runs()
    ok = [k for k, o in outcomes.seen.items() if o == "ok"]
    refused = [k for k, o in outcomes.seen.items() if o == "refused"]
    tally = dict(outcomes.tally())
    outside = outcomes.failed_outside_faults()
    own = [k for k, o in outcomes.seen.items() if o == "proxy 503"]
    return [
        (
            "no servable request refused by the proxy (a 503 of its own: no host it deemed ready)",
            not own,
            f"{len(own)} refused",
        ),
        (
            "errors only inside a fault's window",
            not outside,
            f"{len(outside)} outside: {outcomes.describe(outside)}",
        ),
        ("requests sent", len(outcomes.seen) > 100, f"{json.dumps(tally)}; {outcomes.describe()}"),
        ("every acknowledged request ran once", all(runs[k] == 1 for k in ok), f"{len(ok)} ok"),
        ("no request ran twice", all(n == 1 for n in runs.values()), f"{sum(runs.values())} runs"),
        (
            "a refusal (503, Retry-After) means it did not run",
            all(runs[k] == 0 for k in refused),
            f"{len(refused)} refused, {sum(runs[k] for k in refused)} of them ran",
        ),
    ]


def _proxy_checks(proxy: Proxy) -> list[Check]:
    """What the proxy logged (haproxy logs each bad request: a client speaking TLS, or anything
    but HTTP, to its plain-HTTP port shows as ``<BADREQ>`` with the proxy's refusal, ``PR--``;
    a connection closed before any request, such as the test's own wait for the port, is
    ``CR--`` and says nothing)."""
    if proxy.kind != "haproxy":
        return []
    log = (proxy.directory / "proxy.log").read_text(errors="replace").splitlines()
    bad = [line for line in log if "BADREQ" in line and " CR-- " not in line]
    down = [line for line in log if " is DOWN" in line]
    return [
        (
            "no client spoke TLS (or anything but HTTP) to the proxy",
            not bad,
            f"{len(bad)} bad requests {bad[:2]}; hosts taken out {len(down)} times",
        )
    ]


def _report(name: str, checks: list[Check], print_: Callable[[str], None] = print) -> None:
    for what, passed, detail in checks:
        print_(f"deployment {name}: {'PASS' if passed else 'FAIL'} {what} ({detail})")


@pytest.mark.parametrize("engine", ["hypercorn", "native"])
@pytest.mark.parametrize("kind", ["nginx", "haproxy"])
async def test_one_service_across_hosts(
    kind: str, engine: str, tmp_path: Path, redis_server: RedisServer
) -> None:
    ledger = tmp_path / "ledger"
    env = {
        "MCPFAST_KEYS": KEYS,
        "DEPLOY_LEDGER": str(ledger),
        "MCPFAST_STATE_DIR": str(tmp_path / "state"),
    }
    hosts = [Host(address, engine, redis_server.url, env) for address in HOST_ADDRESSES]
    proxy = Proxy(kind, hosts, tmp_path / kind)
    outcomes = Outcomes(ledger)
    try:
        for host in hosts:
            await host.start()
        await proxy.start()
        with trio.fail_after(4 * BOUND):
            checks = await _scenario(proxy, hosts, redis_server, outcomes)
    finally:
        proxy.stop()
        for host in hosts:
            host.stop()
    checks += _ledger_checks(outcomes) + _proxy_checks(proxy)
    _report(f"{kind}/{engine}", checks)
    failed = [c for c in checks if not c[1]]
    assert not failed, failed
