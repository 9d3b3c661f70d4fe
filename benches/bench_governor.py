"""The cost of the governor per request (issue 27: concurrency caps, deadlines, load shedding),
in process (no sockets), as bench_limits.py drives the ASGI app: a 2026-07-28 ``tools/call`` of
an ``instant`` echo tool, answered 200, every answer checked.

Rows, each in a fresh process, in interleaved rounds (the least wall and CPU time of each row
are kept, CPU being the steadiest on a shared machine; ratios are against ``nothing set`` of
the same run):

- ``before governor``: a copy of ``python/`` with the governor's hooks cut out (`CUTS`: the
  endpoint's shedding check, the caps' slots and the deadline around a tool's run): what
  ``nothing set`` must stay within 1% of;
- ``nothing set``: the code as it is, no cap, deadline or shedding configured;
- ``cap + deadline``: the tool declares ``concurrency=1000, timeout=60`` (a slot taken and
  given back, a cancel scope, per call);
- ``shedding on``: ``shed_in_flight`` (never reached) and ``shed_latency_ms`` (the in-flight
  count and the latency average kept per call).

    python benches/bench_governor.py [--requests 20000] [--rounds 5] [--only ROW,ROW]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from asgi_calls import echo_calls

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
ROWS = ("before governor", "nothing set", "cap + deadline", "shedding on")
CUTS = {
    "mcpfast/server/core/endpoint.py": [
        (
            "        shed = self.runtime.governor.shed(messages) if self.runtime.governor.shedding"
            " else None\n        if shed is not None:",
            "        if False:",
        )
    ],
    "mcpfast/server/core/methods/tools.py": [
        (
            "        if entry.limits is NO_LIMITS and turn.runtime.governor.idle:  # nothing to"
            " govern\n            turn.start()\n",
            "        if True:\n            turn.start()\n",
        )
    ],
    "mcpfast/server/framework/features.py": [
        (
            "        if timeout is None:\n            value = await running\n        else:\n"
            "            with trio.move_on_after(timeout) as deadline:\n"
            "                value = await running\n"
            "            if deadline.cancelled_caught:\n"
            "                raise _overran(entry.definition.name, timeout)\n",
            "        value = await running\n",
        )
    ],
}
"""The governor's hooks on this request's path, each replaced wherever it is (in the ``before
governor`` copy) by what the code was before them (``if True:`` compiles to nothing)."""


def before_governor(into: Path) -> Path:
    """A copy of ``python/`` (with the built extension) without the governor's hooks."""
    tree = into / "python"
    shutil.copytree(REPO / "python", tree, ignore=shutil.ignore_patterns("__pycache__"))
    for name, cuts in CUTS.items():
        path = tree / name
        text = path.read_text()
        for old, new in cuts:
            assert old in text, (name, old)
            text = text.replace(old, new)
        path.write_text(text)
    return tree


def row(name: str, requests: int) -> dict[str, float]:
    """Run one row in this process: its microseconds per request, wall and CPU."""
    import mcpfast
    from mcpfast.server.state.keys import KeyRing

    server = mcpfast.Server("bench", "1.0")
    capped = name == "cap + deadline"

    @server.tool(instant=True, concurrency=1000 if capped else None, timeout=60 if capped else None)
    def echo(text: str) -> str:
        return text

    shedding: dict[str, Any] = {}
    if name == "shedding on":
        shedding = {"shed_in_flight": 1_000_000, "shed_latency_ms": 60_000}
    keys = KeyRing(keys={"k": b"0123456789abcdef0123456789abcdef"}, signing="k")
    app: Any = mcpfast.asgi_app(server, mcpfast.Config(**shedding), keys=keys)
    return echo_calls(app, requests)


def measure(name: str, tree: Path, requests: int) -> dict[str, float]:
    argv = [sys.executable, __file__, "--row", name, "--requests", str(requests)]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        trees = {name: REPO / "python" for name in ROWS}
        trees["before governor"] = before_governor(Path(tmp))
        rows = [name for name in ROWS if args.only is None or name in args.only.split(",")]
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in rows}
        for _ in range(args.rounds):
            for name in rows:
                runs[name].append(measure(name, trees[name], args.requests))
    wall = {name: min(r["us"] for r in results) for name, results in runs.items()}
    cpu = {name: min(r["cpu_us"] for r in results) for name, results in runs.items()}
    median = {name: statistics.median(r["cpu_us"] for r in rs) for name, rs in runs.items()}
    print(f"{args.rounds} rounds of {args.requests} requests per row; the least of each column")
    print("| row | µs/req | CPU µs/req | median CPU µs/req | vs nothing set (CPU) |")
    print("|---|---:|---:|---:|---:|")
    for name in rows:
        print(
            f"| {name} | {wall[name]:.1f} | {cpu[name]:.1f} | {median[name]:.1f} "
            f"| {cpu[name] / cpu['nothing set']:.3f}x |"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", help="the rows to run, comma-separated (default: all)")
    parser.add_argument("--row", choices=ROWS, help=argparse.SUPPRESS)
    parsed = parser.parse_args()
    if parsed.row is not None:
        print(json.dumps(row(parsed.row, parsed.requests)))
    else:
        main(parsed)
