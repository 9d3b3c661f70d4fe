"""``mcpfast load --compare``: the demo server on the Hypercorn engine and on the native one, 2
interleaved rounds of 2 s: the table's medians and ratios are those of the rounds' numbers in
``compare.json``, which are each round's own locust statistics; the chart is drawn; thresholds
apply to every server and round."""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import statistics
from pathlib import Path
from typing import Any

import pytest
import trio

from ..helpers import REPO
from .processes import free_port, mcpfast_command, server_process
from .test_load import _require


def _aggregate(out: str) -> dict[str, str]:
    with (Path(out) / "load_stats.csv").open(newline="") as handle:
        return next(r for r in csv.DictReader(handle) if r["Name"] == "Aggregated")


def _check_server(server: dict[str, Any], first: dict[str, Any]) -> None:
    """A server's medians and ratios from its rounds, each round from its own CSV."""
    rounds = server["rounds"]
    assert [r["round"] for r in rounds] == [1, 2]
    for numbers in rounds:
        row = _aggregate(numbers["out"])
        assert numbers["requests"] == int(row["Request Count"]) > 0
        assert numbers["rps"] == pytest.approx(float(row["Requests/s"]))
        assert numbers["p99"] == float(row["99%"]) and numbers["failures"] == 0
    for key in ("rps", "p50", "p99"):
        assert server[key] == pytest.approx(statistics.median(r[key] for r in rounds))
    assert server["rps_ratio"] == pytest.approx(server["rps"] / first["rps"])
    assert server["p99_ratio"] == pytest.approx(server["p99"] / first["p99"])


async def test_compare_the_two_engines(tmp_path: Path) -> None:
    _require("locust", "the load extra")
    ports = {"hypercorn": free_port(), "native": free_port()}
    argv = {
        name: mcpfast_command("serve", "--port", str(port), "--engine", name)
        for name, port in ports.items()
    }
    async with (
        server_process(argv["hypercorn"], ports["hypercorn"]) as hypercorn,
        server_process(argv["native"], ports["native"]) as native,
    ):
        command = mcpfast_command(
            "load", "--compare", hypercorn, f"native={native}", "--label", "hypercorn",
            "--label", "native", "--rounds", "2", "-t", "2s", "-u", "4", "--user-class", "tools",
            "--out", str(tmp_path), "--fail-on", "requests<1", "--fail-on", "p99>0ms",
        )  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(REPO / "python")}
        with trio.fail_after(90):
            done = await trio.run_process(
                command, capture_stdout=True, capture_stderr=True, check=False, env=env
            )
    output = done.stdout.decode()
    print(output)
    assert done.returncode == 4, output + done.stderr.decode()  # p99>0ms fails everywhere
    lines = output.splitlines()
    # interleaved: the second round in the reverse order
    rounds = [line.split(":")[0] for line in lines if line.startswith("round ")]
    assert rounds == [
        "round 1/2  hypercorn",
        "round 1/2  native",
        "round 2/2  native",
        "round 2/2  hypercorn",
    ]
    document = json.loads((tmp_path / "compare.json").read_text())
    first, second = document["servers"]
    assert (first["label"], second["label"]) == ("hypercorn", "native")
    assert first["url"] == hypercorn and second["url"] == native
    _check_server(first, first)
    _check_server(second, first)
    assert first["rps_ratio"] == first["p99_ratio"] == 1.0
    header = next(i for i, line in enumerate(lines) if line.startswith("server "))
    assert lines[header].split() == "server req/s p50 ms p99 ms failures req/s x p99 x".split()
    cells = {line.split()[0]: line.split()[1:] for line in lines[header + 2 : header + 4]}
    for server in (first, second):
        rps, p50, p99, failures, rps_x, p99_x = cells[server["label"]]
        assert (rps, p50, p99) == (
            f"{server['rps']:.1f}",
            f"{server['p50']:.0f}",
            f"{server['p99']:.0f}",
        )
        assert (failures, rps_x, p99_x) == (
            "0",
            f"{server['rps_ratio']:.2f}",
            f"{server['p99_ratio']:.2f}",
        )
    assert "req/s, p50 and p99: the median of 2 rounds" in output
    failed = [line for line in lines if line.startswith("threshold ")]
    assert [line.split(": FAIL")[0] for line in failed] == [
        "threshold hypercorn round 1",
        "threshold native round 1",
        "threshold native round 2",
        "threshold hypercorn round 2",
    ]
    assert all("p99>0ms" in line for line in failed)
    if importlib.util.find_spec("matplotlib") is not None:
        assert (tmp_path / "compare.png").read_bytes()[:4] == b"\x89PNG"
