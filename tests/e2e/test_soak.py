"""The soak (`loadtests/soak.py`), short: stateless and legacy-session calls from wrk plus
clients opening and deleting sessions, answering elicitations in both eras, running tasks and
dropping streams, against the engine under test. A short run cannot show memory flat (the long
run's figures are in HARDENING.md); it shows every request answered, every descriptor given
back, and growth within a loose bound."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ..helpers import ENGINE, REPO


@pytest.mark.serial  # wrk on a core: the machine to itself
def test_a_short_soak_answers_everything_and_gives_back_descriptors(tmp_path: Path) -> None:
    if shutil.which("wrk") is None:
        reason = "wrk is not installed (apt-get install wrk)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason + " and CI=true requires it (.ci/run installs it)")
        pytest.skip(reason)
    report = tmp_path / "soak.json"
    argv = [sys.executable, str(REPO / "loadtests" / "soak.py"), "--engine", ENGINE]
    argv += ["--requests", "10000", "--sample", "1", "--max-growth", "0.25", "--json", str(report)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert report.exists(), done.stderr[-2000:]
    result = json.loads(report.read_text())
    assert result["errors"] == 0, result["failures"]
    assert result["flows"].get("legacy session", 0) > 0 and result["flows"].get("modern", 0) > 0
    assert result["fds"]["end"] <= result["fds"]["warm"] + 4, result["fds"]
    assert done.returncode == 0, {k: v for k, v in result.items() if k != "samples"}
