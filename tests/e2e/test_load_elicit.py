"""``mcpfast load`` elicitation through the real stack: the demo server's ``greet`` (the engine
under test) asks for a name, the elicit users answer in both eras (modern ``input_required``
retries; legacy ``elicitation/create`` on the call's stream answered by a POST) and every call
ends in the greeting; given its tool, the class joins the default mix."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..helpers import ENGINE
from .processes import free_port, mcpfast_command, server_process
from .test_load import _check_ran, _load, _require


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_elicit_users_answer_in_both_eras(era: str, tmp_path: Path) -> None:
    """Modern: only the elicit users; legacy: the whole mix with them (12 users: one of each
    class at least)."""
    _require("locust", "the load extra")
    port = free_port()
    only = ("--user-class", "elicit", "-u", "4") if era == "modern" else ("-u", "12")
    extra = (*only, "--era", era, "--elicit-tool", "greet")
    command = mcpfast_command("serve", "--port", str(port), "--engine", ENGINE)
    async with server_process(command, port) as url:
        run = await _load(url, tmp_path, *extra)
    prefix = "" if era == "modern" else "legacy "
    calls = run.requests(f"{prefix}elicit tools/call greet (1 round)")
    assert calls > 0, run.output
    said = f"mcpfast load: {prefix}elicit tools/call greet (1 round) answered 'Hello, load!'"
    assert said in run.lines, run.output
    if era == "modern":
        first, retry = (run.requests(f"elicit tools/call greet #{n}") for n in (1, 2))
        assert first >= retry >= calls, run.output
        assert set(run.spawned()) == {"ElicitUser"}
    else:
        streams = run.requests("legacy elicit tools/call greet")
        answers = run.requests("legacy elicit answer elicitation/create")
        assert streams >= answers >= calls, run.output
        assert "ElicitUser" in run.spawned() and len(run.spawned()) == 6, run.spawned()
    _check_ran(run)


async def test_without_a_tool_the_elicit_users_are_skipped(tmp_path: Path) -> None:
    _require("locust", "the load extra")
    port = free_port()
    command = mcpfast_command("serve", "--port", str(port), "--engine", ENGINE)
    async with server_process(command, port) as url:
        run = await _load(url, tmp_path, "--user-class", "elicit", "--era", "legacy", expect=3)
    assert (
        "mcpfast load: skipping ElicitUser: no tool to call: give --elicit-tool NAME "
        "(2025-11-25 session)" in run.lines
    ), run.output
