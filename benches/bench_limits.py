"""The cost of rate limits per request (issue 27), in process (no sockets), as bench_dispatch.py
drives the ASGI app: a 2026-07-28 ``tools/call`` of an ``instant`` echo tool, answered 200.

Rows, each in a fresh process, in interleaved rounds; of each row, the lowest wall-clock and
the lowest CPU microseconds per request over the rounds (each its own minimum: on a shared,
loaded machine the minimum is the measure least disturbed), and the ratios against ``no limit``
of the same run:

- ``before limits``: today's code with the limiter's hooks taken out (a copy of ``python/``
  whose endpoint has no limiter check and whose ASGI engine reads no remote address: what the
  code was before rate limits, everything else equal): what "no limit" must stay within 1% of;
- ``no limit``: the code as it is, no limit configured (one attribute check per request);
- ``local limit``: a server-wide limit (never reached) in the worker's own buckets (`LocalBus`);
- ``redis bus, no limit``: the same server on a `RedisBus`, no limit (the Redis row's own
  baseline: the bus costs nothing on this request);
- ``redis limit``: the limit's bucket in Redis (one script, one round trip, per request), on a
  ``redis-server`` on loopback that this bench starts.

Each row reports wall-clock and CPU microseconds per request (CPU: the process's own; Redis's
is not in it).

    python benches/bench_limits.py [--requests 20000] [--rounds 5] [--only "no limit,..."]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from asgi_calls import echo_calls

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
ROWS = ("before limits", "no limit", "local limit", "redis bus, no limit", "redis limit")
NEVER = "1000000000/s"
"""A limit never reached: every request takes a token and is admitted."""
HOOKS = {
    "mcpfast/server/core/endpoint.py": (
        "        refused: dict[int, RateLimited] | None = None\n        if self.limiter is not None:",
        "        if batch:\n",
        "        refused = None\n        if batch:\n",
    ),
    "mcpfast/server/engines/asgi.py": (
        "        if self.endpoint.needs_peer:",
        "        body = AsgiBody(",
        "        body = AsgiBody(",
    ),
}
"""Where the limiter's hooks are cut out of the copy ``before limits`` runs: in each file, from
the first text up to the second, replaced by the third."""


def before_limits(into: Path) -> Path:
    """A copy of ``python/`` (with the built extension) without the limiter's hooks."""
    tree = into / "python"
    shutil.copytree(REPO / "python", tree, ignore=shutil.ignore_patterns("__pycache__"))
    for name, (start, end, instead) in HOOKS.items():
        path = tree / name
        text = path.read_text()
        first = text.index(start)
        last = text.index(end, first)
        path.write_text(text[:first] + instead + text[last + len(end) :])
    return tree


# ------------------------------------------------------------------------------------ one row


def row(name: str, requests: int, redis_url: str | None) -> dict[str, float]:
    """Run one row in this process: its microseconds per request, wall and CPU."""
    import mcpfast
    from mcpfast.server.state.keys import KeyRing

    bus: Any = None
    if name.startswith("redis"):
        from mcpfast.server.state.redis_bus import RedisBus

        bus = RedisBus(redis_url or "")
    limited = name.endswith("limit") and not name.endswith("no limit") and name != "before limits"
    server = mcpfast.Server("bench", "1.0", bus=bus, rate_limit=NEVER if limited else None)

    @server.tool(instant=True)
    def echo(text: str) -> str:
        return text

    keys = KeyRing(keys={"k": b"0123456789abcdef0123456789abcdef"}, signing="k")
    app: Any = mcpfast.asgi_app(server, keys=keys)
    assert (app.endpoint.limiter is not None) == limited, name
    return echo_calls(app, requests)


# ---------------------------------------------------------------------------------- the run


def start_redis() -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return process, f"redis://127.0.0.1:{port}/0"
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError("redis-server did not start")


def measure(name: str, tree: Path, args: argparse.Namespace, redis_url: str) -> dict[str, float]:
    argv = [sys.executable, __file__, "--row", name, "--requests", str(args.requests)]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [*argv, "--redis", redis_url], env=env, capture_output=True, text=True, check=True
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main(args: argparse.Namespace) -> None:
    redis, redis_url = start_redis()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            before = before_limits(Path(tmp))
            trees = {name: REPO / "python" for name in ROWS} | {"before limits": before}
            only = set(args.only.split(",")) | {"no limit"} if args.only else set(ROWS)
            rows = [name for name in ROWS if name in only]
            runs: dict[str, list[dict[str, float]]] = {name: [] for name in rows}
            for _ in range(args.rounds):
                for name in rows:
                    runs[name].append(measure(name, trees[name], args, redis_url))
    finally:
        redis.kill()
        redis.wait()
    wall = {name: min(r["us"] for r in results) for name, results in runs.items()}
    cpu = {name: min(r["cpu_us"] for r in results) for name, results in runs.items()}
    print(f"{args.rounds} rounds of {args.requests} requests per row, interleaved; lowest of each")
    print("| row | µs/req | CPU µs/req | vs no limit (µs) | vs no limit (CPU) | median CPU µs |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in rows:
        median = statistics.median(r["cpu_us"] for r in runs[name])
        print(
            f"| {name} | {wall[name]:.1f} | {cpu[name]:.1f} | {wall[name] / wall['no limit']:.3f}x "
            f"| {cpu[name] / cpu['no limit']:.3f}x | {median:.1f} |"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", default="", help="the rows to run, by name, comma-separated")
    parser.add_argument("--row", choices=ROWS, help=argparse.SUPPRESS)
    parser.add_argument("--redis", help=argparse.SUPPRESS)
    parsed = parser.parse_args()
    if parsed.row is not None:
        print(json.dumps(row(parsed.row, parsed.requests, parsed.redis)))
    else:
        main(parsed)
