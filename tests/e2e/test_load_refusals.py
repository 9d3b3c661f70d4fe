"""``mcpfast load``'s spike against a server whose tool is rate limited (issue 27): the limit
holds (the admitted calls stay near it through the spike), the rest are counted as rate
limited apart from other failures (the live line, the summary, ``summary.json``), and
``--fail-on rate_limited>0`` fails the run."""

from __future__ import annotations

import json
import re
from pathlib import Path

from mcpfast.load.report import read_history
from mcpfast.load.thresholds import EXIT_THRESHOLDS

from ..helpers import ENGINE
from .processes import free_port, mcpfast_command, server_process
from .test_load import _load, _require

LIMIT = 20
"""Calls of ``echo`` a second, for every caller (all the users share one address)."""
AT, FOR = 2, 3
"""The spike: from ``AT`` s into the run, for ``FOR`` s."""


async def test_a_spike_against_a_limit_is_held_and_counted_apart(tmp_path: Path) -> None:
    _require("locust", "the load extra")
    port = free_port()
    argv = mcpfast_command(
        "serve", "--port", str(port), "--engine", ENGINE, "--tool-rate-limit", f"echo={LIMIT}/s"
    )
    spike = f"spike:base=2,at={AT}s,for={FOR}s"
    async with server_process(argv, port) as url:
        run = await _load(
            url,
            tmp_path,
            *("-u", "12", "--shape", spike, "--user-class", "tools", "--tool", "echo"),
            *("--fail-on", "rate_limited>0"),
            seconds=7,
            expect=EXIT_THRESHOLDS,
        )
    document = json.loads((tmp_path / "summary.json").read_text())
    total = document["total"]
    assert document["rate_limited"] == total["failures"] > 0, document  # nothing else failed
    assert {(e["status"], e["code"]) for e in document["errors"]} == {("429", "-32023")}
    (verdict,) = document["thresholds"]
    assert verdict["failed"] and verdict["measured"] == document["rate_limited"]
    assert f"rate limited: {document['rate_limited']}, other failures: 0" in run.output
    assert re.search(r"failures \d+ \(rate limited \d+\)", run.output), run.output
    assert run.output.count("first HTTP 429 JSON-RPC -32023") == 1, run.output  # said once

    points = read_history(tmp_path / "load_stats_history.csv")
    during = [p for p in points if AT + 0.5 <= p.t <= AT + FOR - 0.5 and p.rps > 0]
    assert during, points
    admitted = sum(p.rps - p.fps for p in during) / len(during)
    refused = sum(p.fps for p in during) / len(during)
    assert 0.6 * LIMIT <= admitted <= 1.5 * LIMIT, [(p.t, p.rps, p.fps) for p in points]
    assert refused > admitted, [(p.t, p.rps, p.fps) for p in points]  # the rest: refused
