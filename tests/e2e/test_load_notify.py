"""``mcpfast load`` notification latency through the real stack: listeners on the demo server (the
engine under test) held while the trigger calls its ``touch`` tool, in both eras; a trigger that
makes no notification counts every awaited one as lost; without a trigger tool the class is
skipped, saying why."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from ..helpers import ENGINE
from .processes import free_port, mcpfast_command, server_process
from .test_load import Run, _check_ran, _load, _require

NOTIFY = ("--user-class", "notify", "-u", "4", "--notify-interval", "0.25")


def _demo(port: int) -> list[str]:
    return mcpfast_command("serve", "--port", str(port), "--engine", ENGINE)


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_notifications_are_timed_from_their_trigger(era: str, tmp_path: Path) -> None:
    """Every trigger's notification reaches the listeners that awaited it, none lost: the
    notifications are recorded (at most one per trigger and listener) and nothing fails."""
    _require("locust", "the load extra")
    port = free_port()
    extra = (*NOTIFY, "--era", era, "--notify-tool", "touch", "--notify-uri", "demo://readme")
    async with server_process(_demo(port), port) as url:
        run = await _load(url, tmp_path, *extra, seconds=3)
    prefix = "" if era == "modern" else "legacy "
    notified = run.requests(f"{prefix}notification resources/updated")
    triggers = run.requests(f"{prefix}notify tools/call touch")
    assert notified > 0 and triggers > 0, run.output
    assert notified <= triggers * 4, run.output
    stream = "subscriptions/listen" if era == "modern" else "legacy GET stream"
    assert run.requests(stream) > 0, run.output
    assert set(run.spawned()) == {"NotifyUser"}
    _check_ran(run)


async def test_a_notification_that_never_comes_is_lost(tmp_path: Path) -> None:
    """A trigger tool that notifies nobody (``echo``): every notification awaited is a
    ``NotificationLost`` failure, timed at the bound."""
    _require("locust", "the load extra")
    port = free_port()
    extra = (*NOTIFY, "--notify-tool", "echo", "--notify-timeout", "0.3")
    async with server_process(_demo(port), port) as url:
        run = await _load(url, tmp_path, *extra, expect=1)
    row = run.stats()["notification resources/updated"]
    assert int(row["Request Count"]) == int(row["Failure Count"]) > 0, run.output
    assert row["50%"] == "300", row
    assert run.requests("notify tools/call echo") > 0
    assert _failures(run) == {
        "notification resources/updated": "NotificationLost('none within 0.3s of its trigger')"
    }
    assert "NotificationLost" in run.output  # the errors table groups them by their kind


def _failures(run: Run) -> dict[str, str]:
    with (run.out / "load_failures.csv").open(newline="") as handle:
        return {row["Name"]: row["Error"] for row in csv.DictReader(handle)}


async def test_without_a_trigger_tool_the_notify_users_are_skipped(tmp_path: Path) -> None:
    _require("locust", "the load extra")
    port = free_port()
    async with server_process(_demo(port), port) as url:
        run = await _load(url, tmp_path, "--user-class", "notify", expect=3)
    assert (
        "mcpfast load: skipping NotifyUser: no tool to call: give --notify-tool NAME (2026-07-28)"
        in run.lines
    ), run.output
