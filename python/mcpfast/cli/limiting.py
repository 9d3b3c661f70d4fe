"""``mcpfast serve``'s rate-limit flags (`server.core.limiter`; the `Config` fields they set),
each defaulting to its ``MCPFAST_*`` variable, as the ``--auth-*`` flags do."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from ..protocol.limits import parse_rate


def add_limit_arguments(parser: argparse.ArgumentParser) -> None:
    """The rate-limit flags (unset, and no variable: the `Config` default)."""
    group = parser.add_argument_group(
        "rate limits (experimental: -32023, HTTP 429)",
        "A RATE is N/period with period s, min, h or day, and an optional burst: "
        "'100/min burst=20'. Each flag defaults to its variable; a list variable holds "
        "NAME=RATE pairs separated by commas.",
    )
    group.add_argument(
        "--rate-limit",
        metavar="RATE",
        help="requests per caller (token subject and client, else address) [$MCPFAST_RATE_LIMIT]",
    )
    group.add_argument(
        "--tool-rate-limit",
        action="append",
        metavar="NAME=RATE",
        help="calls of tool NAME per caller; repeatable [$MCPFAST_TOOL_RATE_LIMITS]",
    )
    group.add_argument(
        "--method-rate-limit",
        action="append",
        metavar="METHOD=RATE",
        help="requests of a JSON-RPC method per caller; repeatable [$MCPFAST_METHOD_RATE_LIMITS]",
    )
    group.add_argument(
        "--rate-limit-scope",
        choices=("bus", "worker"),
        help="bus (default: shared by every worker on --bus) or worker [$MCPFAST_RATE_LIMIT_SCOPE]",
    )
    group.add_argument(
        "--rate-limit-failure",
        choices=("open", "closed"),
        help="Redis away: admit (open, default) or refuse 503 [$MCPFAST_RATE_LIMIT_FAILURE]",
    )
    group.add_argument(
        "--trusted-proxy-hops",
        type=int,
        metavar="N",
        help="proxies in front appending X-Forwarded-For (default 0: the connection's address "
        "keys an unauthenticated caller) [$MCPFAST_TRUSTED_PROXY_HOPS]",
    )


def limit_settings(args: argparse.Namespace, environ: Mapping[str, str]) -> dict[str, Any]:
    """The `Config` fields the flags (else the variables) set.

    Raises:
        ValueError: a rate `parse_rate` refuses, a pair without ``=``, a bad choice or count.
    """
    settings: dict[str, Any] = {}
    rate = args.rate_limit or environ.get("MCPFAST_RATE_LIMIT")
    if rate:
        parse_rate(rate)
        settings["rate_limit"] = rate
    for field, flag, variable in (
        ("tool_rate_limits", args.tool_rate_limit, "MCPFAST_TOOL_RATE_LIMITS"),
        ("method_rate_limits", args.method_rate_limit, "MCPFAST_METHOD_RATE_LIMITS"),
    ):
        pairs = flag or [p for p in environ.get(variable, "").split(",") if p.strip()]
        if pairs:
            settings[field] = dict(_pair(text) for text in pairs)
    for field, variable, choices in (
        ("rate_limit_scope", "MCPFAST_RATE_LIMIT_SCOPE", ("bus", "worker")),
        ("rate_limit_failure", "MCPFAST_RATE_LIMIT_FAILURE", ("open", "closed")),
    ):
        value = getattr(args, field) or environ.get(variable)
        if value:
            if value not in choices:
                raise ValueError(f"{field} must be one of {', '.join(choices)}, not {value!r}")
            settings[field] = value
    hops = args.trusted_proxy_hops
    if hops is None and environ.get("MCPFAST_TRUSTED_PROXY_HOPS"):
        hops = int(environ["MCPFAST_TRUSTED_PROXY_HOPS"])
    if hops is not None:
        if hops < 0:
            raise ValueError(f"trusted proxy hops must be 0 or more, not {hops}")
        settings["trusted_proxy_hops"] = hops
    return settings


def _pair(text: str) -> tuple[str, str]:
    name, sep, rate = text.partition("=")
    if not sep or not name.strip():
        raise ValueError(f"expected NAME=RATE, not {text!r}")
    parse_rate(rate)
    return name.strip(), rate.strip()
