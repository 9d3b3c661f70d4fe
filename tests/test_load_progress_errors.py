"""What ``mcpfast load`` shows of locust's errors (`processes.Progress`): a traceback is one
``locust: ...`` line (the exception, where, the greenlet), never a bare ``locust: Traceback``;
locust's own race at exit with ``--processes`` (its CSV writer greenlet and the closed file)
goes to the log only; the live progress goes on around them."""

from __future__ import annotations

import io
import json

from mcpfast.load import PROGRESS_PREFIX
from mcpfast.load.processes import Progress

STATS = "/work/.venv/lib/python3.11/site-packages/locust/stats.py"
RACE = f"""Traceback (most recent call last):
  File "src/gevent/greenlet.py", line 912, in gevent._gevent_cgreenlet.Greenlet.run
  File "{STATS}", line 1170, in stats_writer
    self.requests_csv_filehandle.seek(requests_csv_data_start)
    ^^^^^^^^^^^^^^^^^
ValueError: I/O operation on closed file.
2026-12-02T05:44:44Z <Greenlet at 0x7eff: <bound method StatsCSVFileWriter.stats_writer of <x>>> failed with ValueError

[2026-12-02 05:44:44,170] vm/CRITICAL/locust.main: Unhandled exception in greenlet: <Greenlet at 0x7eff: <bound method StatsCSVFileWriter.stats_writer of <locust.stats.StatsCSVFileWriter object at 0x7eff>>>
Traceback (most recent call last):
  File "src/gevent/greenlet.py", line 912, in gevent._gevent_cgreenlet.Greenlet.run
  File "{STATS}", line 1170, in stats_writer
    self.requests_csv_filehandle.seek(requests_csv_data_start)
ValueError: I/O operation on closed file.
"""
CRASH = """[2026-12-02 05:44:44,170] vm/CRITICAL/locust.main: Unhandled exception in greenlet: <Greenlet at 0x1: <bound method Runner.heartbeat of <r>>>
Traceback (most recent call last):
  File "/x/locust/runners.py", line 88, in heartbeat
    raise KeyError("worker-3")
KeyError: 'worker-3'
"""


def _fed(text: str) -> tuple[str, str]:
    out, log = io.StringIO(), io.StringIO()
    progress = Progress(out, log)
    tick = PROGRESS_PREFIX + json.dumps({"elapsed": 1.0, "users": 2, "requests": 10}) + "\n"
    for raw in [tick, *text.splitlines(keepends=True), tick.replace("1.0", "2.0")]:
        progress.feed(raw)
    return out.getvalue(), log.getvalue()


def test_locust_s_race_at_exit_goes_to_the_log_only() -> None:
    out, log = _fed(RACE)
    assert "locust" not in out and "Traceback" not in out
    assert out.count("users    2") == 2  # the progress went on
    assert log.count("Traceback") == 2


def test_a_traceback_is_one_line() -> None:
    out, _ = _fed(CRASH)
    lines = [line for line in out.splitlines() if line.startswith("locust:")]
    assert lines == [
        "locust: KeyError: 'worker-3' at runners.py:88 in heartbeat (greenlet "
        "Runner.heartbeat); the traceback is in locust.log"
    ]
    assert "Traceback" not in out and out.count("users    2") == 2
