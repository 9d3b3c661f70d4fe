"""`mcpfast.load.fastlive.Live`: the load processes' progress lines added up second by second
(pure: the rows it writes and the status lines it shows, for lines given in any order)."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from mcpfast.load.fastlive import HISTORY_COLUMNS, Live
from mcpfast.load.processes import Progress
from mcpfast.load.report import read_history


def _line(elapsed: float, answered: int, failed: int, counts: dict[str, int]) -> dict[str, Any]:
    return {
        "elapsed": elapsed,
        "answered": answered,
        "failed": failed,
        "sum_us": 1000 * answered,
        "max_us": 2000 if answered else 0,
        "counts": counts,
    }


def _live() -> tuple[Live, io.StringIO, io.StringIO]:
    shown, history = io.StringIO(), io.StringIO()
    return Live(2, 8, 1000.0, Progress(shown, io.StringIO()), history), shown, history


def test_a_row_waits_for_every_process_and_an_ended_one_keeps_its_numbers(
    tmp_path: Path,
) -> None:
    live, shown, history = _live()
    live.add(0, _line(0.0, 0, 0, {}))
    live.add(0, _line(1.0, 10, 1, {"1000": 10}))
    assert history.getvalue().count("\n") == 1  # the header: process 1 has said nothing
    live.add(1, _line(0.0, 0, 0, {}))
    live.add(1, _line(1.0, 20, 0, {"2000": 20}))
    live.add(1, _line(1.5, 25, 0, {"2000": 5}))  # its last line: it ends
    live.ended(1)
    live.add(0, _line(2.0, 30, 1, {"1000": 20}))
    live.ended(0)
    rows = list(csv.DictReader(io.StringIO(history.getvalue())))
    assert list(rows[0]) == list(HISTORY_COLUMNS)
    assert [r["Timestamp"] for r in rows] == ["1000.00", "1001.00", "1002.00"]
    assert [r["Total Request Count"] for r in rows] == ["0", "31", "56"]
    assert [r["Total Failure Count"] for r in rows] == ["0", "1", "1"]
    assert [r["Requests/s"] for r in rows] == ["0.00", "31.00", "25.00"]
    assert rows[1]["50%"] == "2.00" and rows[2]["50%"] == "1.00"  # each second's own buckets
    assert rows[0]["50%"] == "N/A"
    assert "requests       56  failures 1" in shown.getvalue()
    (tmp_path / "load_stats_history.csv").write_text(history.getvalue())
    points = read_history(tmp_path / "load_stats_history.csv")
    assert [p.rps for p in points] == [0.0, 31.0, 25.0]


def test_a_process_that_said_nothing_counts_zero_once_ended() -> None:
    live, _, history = _live()
    assert not live.said(1)
    live.ended(1)
    live.add(0, _line(0.0, 0, 0, {}))
    live.add(0, _line(0.7, 5, 0, {"500": 5}))
    live.ended(0)
    rows = list(csv.DictReader(io.StringIO(history.getvalue())))
    assert [r["Total Request Count"] for r in rows] == ["0", "5"]
    assert rows[1]["Requests/s"] == f"{5 / 0.7:.2f}"
    assert live.said(0) and not live.said(1)
