"""The CLI knows the server it talks to (issue 29): ``serve`` prints a first command that works
against the server it serves (open or protected, both engines); ``inspect`` lists tools,
resources, templates and prompts; ``read`` and ``prompt``; ``call`` converts ``key=value`` by the
tool's input schema and takes ``--json``; unknown names and wrong paths are named; every
``--help`` is plain text; a server file that cannot be imported is one line and exit 2."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import pytest
import trio

import mcpfast
from mcpfast.auth import dev_authorization_server
from mcpfast.cli import _parser, main
from mcpfast.cli.exits import Exit
from mcpfast.load.arguments import arguments_for

from ..helpers import REPO, running
from .processes import failure, free_port, mcpfast_command, started_process
from .test_cli import run_async

README = (REPO / "README.md").read_text()

WEATHER = """
import mcpfast

server = mcpfast.Server("weather")


@server.tool()
def forecast(city: str, days: int, metric: bool = True) -> str:
    \"\"\"The forecast of a city.\"\"\"
    return f"{city}: {days} days, {'metric' if metric else 'imperial'}"
"""

NO_TOOLS = """
import mcpfast

server = mcpfast.Server("quiet")


@server.resource("quiet://note")
def note() -> str:
    return "nothing to call"
"""


def environment(**extra: str) -> dict[str, str]:
    """This environment, the repository importable, no browser of the user's."""
    env = {k: v for k, v in os.environ.items() if k not in ("BROWSER", "DISPLAY", "TERM")}
    return {**env, "PYTHONPATH": str(REPO / "python"), **extra}


@asynccontextmanager
async def serving_file(
    tmp_path: Path, source: str, engine: str, lines: int, *flags: str
) -> AsyncIterator[list[str]]:
    """``mcpfast serve app.py:server`` of ``source`` with ``engine``; yields the ``lines``
    lines it printed after ``try it:``, unindented (``{url}`` in ``flags``: its URL)."""
    (tmp_path / "app.py").write_text(source)
    port = free_port()
    argv = mcpfast_command("serve", "app.py:server", "--port", str(port), "--engine", engine)
    given = [flag.replace("{url}", f"http://127.0.0.1:{port}/mcp") for flag in flags]
    async with started_process([*argv, *given], port, cwd=tmp_path) as (_, process):
        assert process.stderr is not None
        stderr = process.stderr

        def hint() -> list[str]:
            while stderr.readline() != b"try it:\n":
                pass
            return [stderr.readline().decode().strip() for _ in range(lines)]

        with trio.fail_after(20):
            yield await trio.to_thread.run_sync(hint, abandon_on_cancel=True)


def run_line(line: str, **env: str) -> subprocess.CompletedProcess[str]:
    """A printed command line, run as a user would run it (60 s at most)."""
    return subprocess.run(
        shlex.split(line),
        capture_output=True,
        text=True,
        env=environment(**env),
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize("engine", ["hypercorn", "native"])
async def test_serve_prints_a_first_call_of_its_own_first_tool(tmp_path: Path, engine: str) -> None:
    async with serving_file(tmp_path, WEATHER, engine, 2) as hint:
        call, curl = hint
        assert " call http://127.0.0.1:" in call and call.endswith("forecast city=load days=1")
        called = await trio.to_thread.run_sync(lambda: run_line(call))
        assert called.returncode == 0, called.stderr
        assert called.stdout == "load: 1 days, metric\n"
        assert curl.startswith("curl -s http://127.0.0.1:") and "'mcp-name: forecast'" in curl
        body = json.loads(shlex.split(curl)[-1])
        assert body["params"]["arguments"] == {"city": "load", "days": 1}


@pytest.mark.parametrize("engine", ["hypercorn", "native"])
async def test_serve_of_a_server_without_tools_prints_inspect(tmp_path: Path, engine: str) -> None:
    async with serving_file(tmp_path, NO_TOOLS, engine, 1) as hint:
        assert len(hint) == 1 and " inspect http://127.0.0.1:" in hint[0]
        inspected = await trio.to_thread.run_sync(lambda: run_line(hint[0] + " --format text"))
        assert inspected.returncode == 0, inspected.stderr
        assert "quiet://note" in inspected.stdout


BROWSER = """#!/bin/sh
{python} -c '
import sys, urllib.request
urllib.request.urlopen(sys.argv[1], timeout=10).read()  # the redirects, as a browser would
' "$1" > /dev/null 2>&1 &
"""


@pytest.mark.parametrize("engine", ["hypercorn", "native"])
async def test_serve_of_a_protected_server_says_how_to_log_in(tmp_path: Path, engine: str) -> None:
    """The printed call works as printed: its 401 starts the login (a ``$BROWSER`` that
    follows the redirects, as a person approving would)."""
    browser = tmp_path / "browser.sh"
    browser.write_text(BROWSER.format(python=sys.executable))
    browser.chmod(0o755)
    async with dev_authorization_server(scopes_supported=["mcp"]) as dev:
        flags = ("--auth-issuer", dev.issuer, "--resource-url", "{url}", "--auth-scopes", "mcp")
        async with serving_file(tmp_path, WEATHER, engine, 2, *flags) as hint:
            call, login = hint
            assert f"logs in at {dev.issuer}" in login and "(scopes: mcp)" in login
            assert "--bearer-env VAR" in login and "curl" not in login
            env = {"BROWSER": str(browser), "MCPFAST_STATE_DIR": str(tmp_path / "state")}
            with trio.fail_after(60):
                called = await trio.to_thread.run_sync(lambda: run_line(call, **env))
    assert called.returncode == 0, called.stderr
    assert called.stdout == "load: 1 days, metric\n"


# ------------------------------------------------------------------- inspect, read, prompt


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_inspect_lists_tools_resources_templates_and_prompts(demo_url: str, era: str) -> None:
    text = await run_async("inspect", "--era", era, "--format", "text", demo_url)
    assert text.returncode == 0, text.stderr
    for line in (
        "tools:",
        "  echo(text: string) -- Return the text unchanged.",
        "  slow([steps: integer = 5], [delay: number = 0.2]) -- Count to ``steps``, reporting "
        "progress after each step.",
        "resources:",
        "  demo://readme (text/markdown) -- What this server is.",
        "resource templates:",
        "  demo://cities/{city} (application/json) -- Facts about a city.",
        "prompts:",
        "  describe(city) -- Ask the model to describe a city.",
    ):
        assert line in text.stdout.splitlines(), (line, text.stdout)
    report = json.loads((await run_async("inspect", "--era", era, demo_url)).stdout)
    assert [r["uri"] for r in report["resources"]] == ["ui://demo/clock", "demo://readme"]
    assert [t["uriTemplate"] for t in report["resourceTemplates"]] == ["demo://cities/{city}"]
    assert report["prompts"][0]["arguments"][0]["name"] == "city"


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_read_a_resource_and_get_a_prompt(demo_url: str, era: str) -> None:
    readme = await run_async("read", "--era", era, demo_url, "demo://readme")
    assert readme.returncode == 0, readme.stderr
    assert readme.stdout.startswith("# mcpfast demo\n")
    city = await run_async("read", "--era", era, demo_url, "demo://cities/Paris")
    assert json.loads(city.stdout) == {"city": "Paris", "known": True}
    prompt = await run_async("prompt", "--era", era, demo_url, "describe", "city=Paris")
    assert prompt.returncode == 0, prompt.stderr
    assert prompt.stdout == "user:\nDescribe Paris in three sentences.\n"
    missing = await run_async("prompt", "--era", era, demo_url, "describe")
    assert missing.returncode == Exit.USAGE
    assert "describe needs city: add city=VALUE" in failure(missing)


def test_read_and_prompt_over_stdio() -> None:
    server = f"{sys.executable} -m mcpfast serve --stdio"
    env = environment()
    for argv, said in (
        (("prompt", "--stdio", server, "describe", "city=Rome"), "Describe Rome in three"),
        (("read", "--stdio", server, "demo://readme"), "# mcpfast demo"),
    ):
        result = subprocess.run(
            mcpfast_command(*argv), capture_output=True, text=True, env=env, timeout=60
        )
        assert result.returncode == 0 and said in result.stdout, result.stderr


# ---------------------------------------------------------------------------------- call


def typed_server() -> mcpfast.Server:
    server = mcpfast.Server("typed")

    @server.tool()
    def weather(
        city: str,
        days: int,
        hot: bool = False,
        tags: list[str] | None = None,
        limits: dict[str, float] | None = None,
        ratio: float | None = None,
    ) -> dict[str, object]:
        return {
            "city": city,
            "days": days,
            "hot": hot,
            "tags": tags,
            "limits": limits,
            "ratio": ratio,
        }

    return server


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_call_converts_key_value_by_the_input_schema(era: str) -> None:
    async with running(typed_server()) as url:
        call = ("call", "--era", era, url, "weather")
        typed = await run_async(
            *call, "city=12", "days=3", "hot=yes", "tags=a,b", 'limits={"t": 1}', "ratio=null"
        )
        assert typed.returncode == 0, typed.stderr
        assert json.loads(typed.stdout) == {
            "city": "12",
            "days": 3,
            "hot": True,
            "tags": ["a", "b"],
            "limits": {"t": 1},
            "ratio": None,
        }
        given = await run_async(*call, "--json", '{"city": "Oslo", "days": 1}', "days=2")
        assert given.returncode == 0, given.stderr
        assert given.stdout.count("\n") == 1  # the result, once
        assert json.loads(given.stdout)["days"] == 2 and json.loads(given.stdout)["city"] == "Oslo"
        structured = await run_async(*call, "--json", '{"city": "x", "days": 1}', "--structured")
        assert structured.stdout.count("\n") == 1 and json.loads(structured.stdout)["city"] == "x"
        for arguments, said in (
            (("city=x", "days=many"), "weather: days: expected an integer, got 'many'"),
            (("cty=x", "days=1"), "weather: Unknown argument: cty (did you mean city?)"),
            (("city=x", "days=1", "ratio=big"), "ratio: expected a number or null, got 'big'"),
            (("--json", "[1]"), "--json: give the arguments as one JSON object"),
        ):
            refused = await run_async(*call, *arguments)
            assert refused.returncode == Exit.USAGE, refused.stderr
            assert said in failure(refused)


# ----------------------------------------------------------------------- names and paths


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_unknown_names_are_named_with_the_closest(demo_url: str, era: str) -> None:
    for argv, said in (
        (("call", "ech"), "Unknown tool: ech (did you mean echo?)"),
        (("call", "nope"), "Unknown tool: nope (the tools: echo, add, slow"),
        (("prompt", "describ"), "Unknown prompt: describ (did you mean describe?)"),
        (("read", "demo://readm"), "Unknown resource: demo://readm (did you mean demo://readme?)"),
    ):
        command, name = argv
        result = await run_async(command, "--era", era, demo_url, name)
        assert result.returncode == Exit.USAGE, result.stderr
        assert said in failure(result)


@pytest.mark.parametrize("era", ["auto", "modern", "legacy"])
async def test_a_wrong_path_names_the_url_tried(demo_url: str, era: str) -> None:
    wrong = demo_url.removesuffix("/mcp") + "/api"
    result = await run_async("inspect", "--era", era, wrong)
    assert result.returncode == Exit.USAGE
    assert f"HTTP 404 at {wrong}: is the MCP path /mcp?" in failure(result)


# --------------------------------------------------------------------------- help, import


def test_every_help_is_plain_text_with_a_line_for_every_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    parser = _parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, sub in [("", parser), *commands.choices.items()]:
        with pytest.raises(SystemExit):
            main([name, "--help"] if name else ["--help"])
        shown = capsys.readouterr().out
        assert "`" not in shown and not re.search(r"mcpfast\.\w", shown), (name, shown)
        for action in sub._actions:
            if isinstance(action, argparse._SubParsersAction):  # a line per command
                assert all(choice.help for choice in action._choices_actions)
                assert len(action._choices_actions) == len(action.choices)
            else:
                assert action.help, (name, action.option_strings or action.dest)


BROKEN = {
    "syntax.py": (
        "import mcpfast\nserver = mcpfast.Server('x')\ndef f(:\n",
        "syntax.py:3: SyntaxError",
    ),
    "missing.py": (
        "import mcpfast\nimport nosuchmodule\n",
        "missing.py:2: ModuleNotFoundError: No module named 'nosuchmodule'",
    ),
}


@pytest.mark.parametrize("target", ["syntax.py:server", "syntax", "missing.py:server", "missing"])
def test_a_server_file_that_cannot_be_imported_is_one_line(tmp_path: Path, target: str) -> None:
    for file, (source, _) in BROKEN.items():
        (tmp_path / file).write_text(source)
    result = subprocess.run(
        mcpfast_command("serve", target, "--port", str(free_port())),
        capture_output=True,
        text=True,
        env=environment(),
        timeout=60,
        cwd=tmp_path,
    )
    assert result.returncode == Exit.USAGE
    said = BROKEN[target.partition(":")[0].removesuffix(".py") + ".py"][1]
    assert failure(result).startswith(f"mcpfast: {said}")


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_the_load_user_answers_the_readme_elicitation(
    era: Literal["modern", "legacy"],
) -> None:
    """The README's server, its elicitation answered as ``mcpfast load --elicit-tool`` answers
    one (`arguments_for` of the requested schema: the required fields): the form says which."""
    block = re.search(r"```python\n(.*?)```", README[README.index("## A server") :], re.S)
    assert block is not None
    namespace: dict[str, Any] = {"__name__": "readme_server"}
    exec(block.group(1), namespace)

    def load_user(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": arguments_for(params["requestedSchema"])}

    async with running(namespace["server"]) as url:
        async with mcpfast.connect(url, era, on_elicit=load_user) as client:
            result = await client.call_tool("forecast", {"city": "Porto"})
    assert not result.isError, result.content
    assert result.content[0].text.startswith("Porto: 21 degrees ")  # type: ignore[union-attr]
