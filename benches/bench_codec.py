"""Codec micro-benchmark: the Rust extension against its pure-Python twin, in one process.

    .venv/bin/python benches/bench_codec.py [--seconds 0.05] [--repeat 25]

Each case first checks that both backends give the same result on its input, then times each
backend: best of ``--repeat`` runs of about ``--seconds`` each, the backends alternating run by
run, so that a machine whose speed drifts (a shared VM) still compares them at the same moments.
It prints operations per second and the rust/python ratio. Targets: framing (with header
validation) at least 5x the twin, token verification at least 3x.
"""

from __future__ import annotations

import argparse
import json
import sys
import timeit
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from types import ModuleType
from typing import Any

from mcpfast import _codec_py

try:
    from mcpfast import _rust
except ImportError:
    sys.exit("the Rust extension is not built: run `.venv/bin/maturin develop --release -q`")

MODERN = "2026-07-28"
LEGACY = "2025-03-26"
NOW = 1_780_000_000


@dataclass
class Case:
    name: str
    target: float
    run: Callable[[ModuleType], Any]


def tools_call_case() -> Case:
    """A 2026-07-28 tools/call with _meta, framed, then its headers checked (one x-mcp-header)."""
    message = {
        "jsonrpc": "2.0",
        "id": 42,
        "method": "tools/call",
        "params": {
            "name": "search_issues",
            "arguments": {
                "repository": "octo-org/widgets",
                "query": "label:bug state:open sort:updated-desc",
                "limit": 25,
                "region": "eu-west-1",
                "includeComments": False,
            },
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {
                    "roots": {"listChanged": True},
                    "sampling": {},
                    "elicitation": {"form": {}},
                },
                "io.modelcontextprotocol/clientInfo": {"name": "bench-client", "version": "1.4.2"},
                "progressToken": "p-42",
            },
        },
    }
    body = json.dumps(message).encode()
    headers = {
        "host": "127.0.0.1:8000",
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": "search_issues",
        "mcp-param-region": "eu-west-1",
    }
    param_headers = [("Region", ["region"])]

    def run(codec: ModuleType) -> Any:
        batch, messages = codec.frame(body)
        codec.check_headers(headers, messages[0], param_headers)
        return batch, messages

    return Case("tools/call + headers (2026-07-28)", 5.0, run)


def resource_result_case() -> Case:
    """A resources/read result of about 10 KB, framed."""
    paragraph = (
        'The widget service accepts "bulk" updates of up to 500 items; each item carries '
        "an id, a revision and a payload.\nErrors are reported per item — see §4.2 "
        "(naïve retries are discouraged).\t"
    )
    text = (paragraph * 60)[:10_000]
    message = {
        "jsonrpc": "2.0",
        "id": 7,
        "result": {
            "contents": [
                {
                    "uri": "file:///srv/docs/widgets/README.md",
                    "mimeType": "text/markdown",
                    "text": text,
                }
            ],
            "_meta": {"io.modelcontextprotocol/related": ["file:///srv/docs/widgets/API.md"]},
        },
    }
    body = json.dumps(message, ensure_ascii=False).encode()
    return Case(
        f"resources/read result ({len(body) / 1000:.1f} KB)", 5.0, lambda codec: codec.frame(body)
    )


def batch_case() -> Case:
    """A 2025-03-26 batch of 20 messages, framed."""
    messages: list[dict[str, Any]] = []
    for index in range(20):
        if index % 4 == 3:
            messages.append(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/progress",
                    "params": {"progressToken": f"t{index}", "progress": index, "total": 20},
                }
            )
        elif index % 4 == 2:
            messages.append(
                {
                    "jsonrpc": "2.0",
                    "id": index,
                    "method": "resources/read",
                    "params": {"uri": f"file:///srv/data/{index}.json"},
                }
            )
        else:
            messages.append(
                {
                    "jsonrpc": "2.0",
                    "id": f"req-{index}",
                    "method": "tools/call",
                    "params": {
                        "name": "lookup",
                        "arguments": {"key": f"user:{index}", "fields": ["name", "email"]},
                    },
                }
            )
    body = json.dumps(messages).encode()
    return Case(f"batch of 20 ({LEGACY})", 5.0, lambda codec: codec.frame(body))


def token_case() -> Case:
    """Verification of a signed session token, with two keys in the ring."""
    payload = json.dumps(
        {"session": "4f9c2d1e-8b7a-4c3d-9e2f-1a0b9c8d7e6f", "era": LEGACY, "client": "bench-client"}
    ).encode()
    key = b"0123456789abcdef0123456789abcdef"
    keys = {"2026-06": key, "2026-05": b"fedcba9876543210fedcba9876543210"}
    token = _codec_py.mint_token("2026-06", key, payload, NOW - 120)
    return Case("token verify", 3.0, lambda codec: codec.verify_token(token, keys, NOW, 3600))


def http_head_case() -> Case:
    """An HTTP request head as wrk sends a 2026-07-28 ``tools/call`` (the native engine)."""
    head = (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nContent-Type: application/json\r\n"
        b"Accept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2026-07-28\r\n"
        b"Mcp-Method: tools/call\r\nMcp-Name: echo\r\nContent-Length: 250"
    )
    return Case("HTTP request head (native engine)", 2.0, lambda codec: codec.parse_head(head))


def ops_per_second(function: Callable[[], Any], seconds: float) -> tuple[int, float]:
    """A loop count that takes about ``seconds``, and one timing of it."""
    number = 1
    while True:
        elapsed = timeit.timeit(function, number=number)
        if elapsed >= seconds / 4:
            return max(1, int(number * seconds / elapsed)), elapsed / number
        number *= 4


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=0.05, help="length of one timing run")
    parser.add_argument("--repeat", type=int, default=25, help="timing runs per backend")
    options = parser.parse_args()

    cases = [
        tools_call_case(),
        resource_result_case(),
        batch_case(),
        token_case(),
        http_head_case(),
    ]
    backends = {"python": _codec_py, "rust": _rust}
    print(f"{'case':<38}{'python ops/s':>14}{'rust ops/s':>14}{'rust/python':>13}  target")
    missed = []
    for case in cases:
        # repr: a framed Message has no ==, but the same repr in both backends.
        results = {name: repr(case.run(module)) for name, module in backends.items()}
        if results["rust"] != results["python"]:
            sys.exit(f"{case.name}: the backends disagree:\n{results}")
        calls = {name: partial(case.run, module) for name, module in backends.items()}
        loops = {name: ops_per_second(call, options.seconds)[0] for name, call in calls.items()}
        best = dict.fromkeys(backends, float("inf"))
        for _ in range(options.repeat):
            for name, call in calls.items():
                elapsed = timeit.timeit(call, number=loops[name])
                best[name] = min(best[name], elapsed / loops[name])
        python_ops, rust_ops = 1 / best["python"], 1 / best["rust"]
        ratio = rust_ops / python_ops
        verdict = "ok" if ratio >= case.target else "MISSED"
        if ratio < case.target:
            missed.append(case.name)
        print(
            f"{case.name:<38}{python_ops:>14,.0f}{rust_ops:>14,.0f}{ratio:>12.1f}x"
            f"  >= {case.target:.0f}x {verdict}"
        )
    if missed:
        print(f"\ntargets missed: {', '.join(missed)}")


if __name__ == "__main__":
    main()
