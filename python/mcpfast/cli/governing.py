"""``mcpfast serve``'s flags for concurrency caps, tool deadlines, load shedding and the
lifetime of long streams (`server.core.governor`; the `Config` fields they set)."""

from __future__ import annotations

import argparse
from typing import Any

FLAGS: tuple[tuple[str, str, type, str], ...] = (
    (
        "--tool-timeout",
        "tool_timeout_seconds",
        float,
        "SECONDS: a tool call's deadline when the tool declares none (then an isError result)",
    ),
    (
        "--max-concurrent-per-principal",
        "max_concurrent_per_principal",
        int,
        "N: tool calls one caller (token, else address) runs at once; more wait in a queue",
    ),
    (
        "--concurrency-queue",
        "concurrency_queue",
        int,
        "N: calls that may wait for a concurrency cap (default 64; 0: none); more get 429",
    ),
    (
        "--queue-timeout",
        "queue_timeout_seconds",
        float,
        "SECONDS: the longest wait for a concurrency cap (default 10); then 429",
    ),
    (
        "--shed-in-flight",
        "shed_in_flight",
        int,
        "N: with N tool calls in flight on a worker, new requests get 503 (load shedding)",
    ),
    (
        "--shed-latency-ms",
        "shed_latency_ms",
        float,
        "MS: while recent tool-call latency is above it, new requests get 503",
    ),
    (
        "--max-stream-seconds",
        "max_stream_seconds",
        float,
        "SECONDS: a listen or GET stream then ends cleanly and the client reconnects",
    ),
)
"""Each flag: its name, the `Config` field it sets, its type, its help."""


ZERO_ALLOWED = frozenset({"concurrency_queue"})
"""The fields 0 is a value of (no queue: a full cap refuses at once); the others are above 0."""


def _number(kind: type, zero: bool) -> Any:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if value < 0 or (value == 0 and not zero):
            raise argparse.ArgumentTypeError(f"must be above 0{' or 0' if zero else ''}: {text!r}")
        return value

    return parse


def add_governing_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of `FLAGS` (unset: the `Config` default)."""
    group = parser.add_argument_group("concurrency caps, deadlines, load shedding, streams")
    for flag, field, kind, text in FLAGS:
        metavar, _, help_ = text.partition(": ")
        parse = _number(kind, field in ZERO_ALLOWED)
        group.add_argument(flag, dest=field, type=parse, metavar=metavar, help=help_)


def governing_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The `Config` fields the flags set (those given only)."""
    settings = {field: getattr(args, field, None) for _, field, _, _ in FLAGS}
    return {field: value for field, value in settings.items() if value is not None}
