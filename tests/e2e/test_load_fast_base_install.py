"""``mcpfast load --engine fast`` on mcpfast's base install, through the real CLI on loopback
against the demo server, with locust, gevent and matplotlib unimportable in the CLI and its load
processes (`BLOCKER`, a ``sitecustomize`` on their ``PYTHONPATH``): a local run on one and on two
load processes, and a ``--master`` with one ``--worker --engine fast``, each with its summary,
nothing failed, no chart drawn (a local run says why); the locust engine still refuses to run,
saying what to install."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from ..helpers import REPO
from .processes import free_port, mcpfast_command, server_process
from .test_load_fast import _demo_argv
from .test_load_fast_distributed import BACKENDS, SLOW, Child, _children, _master, _worker

BLOCKER = """\
import sys

BLOCKED = ("locust", "gevent", "matplotlib")


class NotInstalled:
    \"\"\"Refuses the blocked packages and their submodules, as if they were not installed.\"\"\"

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, NotInstalled())
"""

NO_CHART = "(no chart: matplotlib is not installed; pip install 'mcpfast[load]')"
NEEDS_LOCUST = "mcpfast load needs locust: pip install 'mcpfast[load]'"


@pytest.fixture
def base_install(tmp_path: Path) -> dict[str, str]:
    """The environment of a base install: `BLOCKER` first on ``PYTHONPATH``."""
    site = tmp_path / "base-install"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCKER)
    return {"PYTHONPATH": os.pathsep.join([str(site), str(REPO / "python")])}


async def _ran(*children: Child) -> None:
    """Wait for ``children`` to end (bounded: a busy machine, the probe, the processes)."""
    with trio.fail_after(150):
        for child in children:
            await child.ended.wait()


def _summary(out: Path, child: Child) -> dict[str, Any]:
    """``out/summary.json`` of a run that exited 0 with requests and no failure, and drew no
    chart."""
    assert child.process.returncode == 0, child.output
    document: dict[str, Any] = json.loads((out / "summary.json").read_text())
    total = document["total"]
    assert total["requests"] > 0, document
    assert total["failures"] == 0, document["errors"]
    assert "Traceback" not in child.output and not (out / "chart.png").exists(), child.output
    return document


async def test_the_blocker_blocks(base_install: dict[str, str]) -> None:
    """The environment of these tests hides locust, gevent and matplotlib (and submodules)."""
    for module in ("locust", "gevent.monkey", "matplotlib.pyplot"):
        async with _children("rust", base_install) as start:
            child = await start([sys.executable, "-c", f"import {module}"])
            await _ran(child)
        assert child.process.returncode == 1, child.output
        top = module.partition(".")[0]  # imported first
        assert f"ModuleNotFoundError: No module named '{top}'" in child.output


@BACKENDS
@SLOW
@pytest.mark.parametrize("processes", ["1", "2"])
async def test_a_local_run(
    backend: str, processes: str, base_install: dict[str, str], tmp_path: Path
) -> None:
    """``--processes 1`` and ``2`` run and report without locust, gevent or matplotlib."""
    port = free_port()
    out = tmp_path / "out"
    async with (
        server_process(_demo_argv(port), port) as url,
        _children(backend, base_install) as start,
    ):
        argv = ["-u", "4", "-t", "2s", "--processes", processes, "--out", str(out)]
        child = await start(mcpfast_command("load", url, "--engine", "fast", *argv))
        await _ran(child)
    document = _summary(out, child)
    assert NO_CHART in child.lines, child.output  # its history has points: a chart to draw
    assert len(document["workers"] or []) == (2 if processes == "2" else 0), document


@BACKENDS
@SLOW
async def test_a_master_and_a_worker(
    backend: str, base_install: dict[str, str], tmp_path: Path
) -> None:
    """``--master`` and one ``--worker --engine fast`` run and report without locust, gevent or
    matplotlib; the worker's load processes counted every request."""
    port, master_port = free_port(), free_port()
    async with (
        server_process(_demo_argv(port), port) as url,
        _children(backend, base_install) as start,
    ):
        worker = await start(_worker(master_port, tmp_path / "worker"))
        master = await start(_master(url, master_port, tmp_path / "master", "-t", "2s", workers=1))
        await _ran(master, worker)
    assert worker.process.returncode == 0, worker.output
    document = _summary(tmp_path / "master", master)
    workers = document["workers"]
    assert len(workers) == 1 and workers[0]["processes"] == 1, workers
    assert workers[0]["requests"] == document["total"]["requests"]


async def test_the_locust_engine_needs_locust(base_install: dict[str, str], tmp_path: Path) -> None:
    """The locust engine (a run, a worker, a comparison) exits 2 saying what to install."""
    url = "http://127.0.0.1:9/mcp"  # never reached
    for argv in (
        [url, "-t", "1s"],
        [url, "--processes", "2", "-t", "1s"],
        ["--worker", "--master-port", str(free_port())],
        ["--compare", f"a={url}", f"b={url}", "-t", "1s"],
    ):
        async with _children("rust", base_install) as start:
            child = await start(mcpfast_command("load", *argv, "--out", str(tmp_path)))
            await _ran(child)
        assert child.process.returncode == 2, (argv, child.output)
        assert NEEDS_LOCUST in child.lines, (argv, child.output)
