"""The ``mcpfast`` command: ``serve`` a server (the demo by default) over HTTP or stdio;
``inspect`` a server and ``call`` its tools with the client.

An ordinary failure is one line on stderr (``mcpfast: ...``) and an exit code from `Exit`; a
traceback means a bug (in mcpfast, or in the code of a served module)."""

from __future__ import annotations

import argparse
import enum
import errno
import importlib
import importlib.util
import json
import os
import shlex
import socket
import sys
import textwrap
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import msgspec
import trio

from .client import connect
from .client.http import PLAIN_HTTP, SPEAKS_TLS
from .errors import MCPError, TransportError
from .server import Config, Server

# ---------------------------------------------------------------------------------- exit codes


class Exit(enum.IntEnum):
    """The exit codes of ``mcpfast`` (shown by ``mcpfast --help``)."""

    OK = 0
    TOOL_ERROR = 1
    USAGE = 2
    CONNECTION = 3
    TIMEOUT = 4
    INPUT_REQUIRED = 5
    CANNOT_SERVE = 6
    INTERRUPTED = 130


EXIT_MEANINGS = {
    Exit.OK: "success",
    Exit.TOOL_ERROR: "call: the tool returned an error result (isError)",
    Exit.USAGE: "usage or protocol error: bad arguments or URL, a serve target that cannot be "
    "loaded; or the server refused the request (a JSON-RPC error such as an unknown tool, an "
    "answer that is not MCP, not the --era asked for)",
    Exit.CONNECTION: "cannot reach the server: connection refused, unknown host, https:// to "
    "a plain-HTTP server or http:// to a TLS one, the connection or server process went away",
    Exit.TIMEOUT: "no answer within --timeout",
    Exit.INPUT_REQUIRED: "the server needs input mcpfast cannot give: a question "
    "(elicitation) with no terminal, --answer or --answer-file to answer it; sampling; roots",
    Exit.CANNOT_SERVE: "serve: cannot listen on --host:--port (in use, no such address, not "
    "permitted)",
    Exit.INTERRUPTED: "interrupted (Ctrl-C)",
}


def exit_code_table() -> str:
    """The ``--help`` epilog: every `Exit` code and what it means."""
    rows = (
        textwrap.fill(
            EXIT_MEANINGS[code], 78, initial_indent=f"  {code.value:<4} ", subsequent_indent=" " * 7
        )
        for code in Exit
    )
    return "exit codes:\n" + "\n".join(rows)


class CliError(Exception):
    """An ordinary failure: ``mcpfast`` prints ``message`` as one line and exits with ``code``."""

    def __init__(self, code: Exit, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


# ------------------------------------------------------------------------------------- serving


def load_target(target: str | None) -> Server:
    """The `Server` named by ``module:attribute`` or ``file.py:attribute`` (attribute
    ``server`` when left out); the demo if None. Modules are imported from the current
    directory first, as uvicorn and hypercorn do.

    Raises:
        CliError: (`Exit.USAGE`) no such module or file, no such attribute, not a Server.
            An exception raised by the module's own code propagates as is.
    """
    if target is None:
        from .demo import server

        return server
    module_name, _, attribute = target.partition(":")
    attribute = attribute or "server"
    if not module_name:
        raise CliError(Exit.USAGE, f"{target!r}: give module:attribute or file.py:attribute")
    _put_cwd_on_path()
    if module_name.endswith(".py"):
        module = _load_file(module_name)
    else:
        module = _import(module_name)
    found = getattr(module, attribute, None)
    if found is None:
        servers = [name for name, value in vars(module).items() if isinstance(value, Server)]
        hint = f" (its Servers: {', '.join(servers)})" if servers else ""
        raise CliError(Exit.USAGE, f"{module_name} has no attribute {attribute!r}{hint}")
    if not isinstance(found, Server):
        kind = type(found).__name__
        article = "an" if kind[:1].lower() in "aeiou" else "a"
        raise CliError(
            Exit.USAGE, f"{module_name}:{attribute} is not an mcpfast.Server (but {article} {kind})"
        )
    return found


def _put_cwd_on_path() -> None:
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)


def _import(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing != name and not name.startswith(missing + "."):
            raise  # the module itself imports something missing: its own bug
        raise CliError(
            Exit.USAGE, f"no module named {missing!r} (in {os.getcwd()} or on sys.path)"
        ) from None


def _load_file(path_text: str) -> Any:
    path = Path(path_text).resolve()
    if not path.is_file():
        raise CliError(Exit.USAGE, f"no such file: {path_text}")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise CliError(Exit.USAGE, f"cannot load {path_text}")
    module = importlib.util.module_from_spec(spec)
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))  # its sibling modules import as they would
    sys.modules.setdefault(path.stem, module)
    spec.loader.exec_module(module)
    return module


def _serve(args: argparse.Namespace) -> int:
    server = load_target(args.target)
    if args.stdio:
        from .server.stdio import serve_stdio

        trio.run(serve_stdio, server)
        return Exit.OK
    if args.workers < 1:
        raise CliError(Exit.USAGE, "--workers must be 1 or more")
    if args.workers > 1 and args.engine == "native" and args.port == 0:
        raise CliError(Exit.USAGE, "several native workers need a fixed --port (not 0)")
    config = Config(
        host=args.host, port=args.port, path=args.path, workers=args.workers, engine=args.engine
    )
    announced: list[str] = []

    def announce(urls: list[str]) -> None:
        announced.extend(urls)
        url = urls[0] + args.path
        also = "".join(f", {u}{args.path}" for u in urls[1:])
        print(f"mcpfast: serving {server.info.name} at {url}{also}", file=sys.stderr)
        print(_curl_hint(url), file=sys.stderr, flush=True)

    try:
        if args.workers > 1:
            from .server.workers import run_workers

            run_workers(args.target, config, announce)
        else:
            trio.run(_serve_http, server, config, announce)
    except BaseException as exc:
        error = _socket_error(exc)
        if error is None or (announced and args.workers == 1):  # serving had begun: a bug
            raise
        raise CliError(Exit.CANNOT_SERVE, _listen_failure(args.host, args.port, error)) from None
    return Exit.OK


async def _serve_http(
    server: Server, config: Config, announce: Callable[[list[str]], None]
) -> None:
    """Serve until SIGINT/SIGTERM; ``announce`` the URLs once they are bound."""
    from .server.serve import serve, until_signal

    async with trio.open_nursery() as nursery:
        urls = await nursery.start(partial(serve, server, config, shutdown_trigger=until_signal))
        announce(urls)


def _socket_error(exc: BaseException) -> OSError | None:
    """The OSError of a socket (no file name: not, say, the key file) in ``exc`` (itself, or
    in a group), if any."""
    if isinstance(exc, OSError):
        return exc if exc.filename is None else None
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _socket_error(inner)
            if found is not None:
                return found
    return None


_LISTEN_REASONS = {
    errno.EADDRINUSE: "the address is already in use (another server listens there; choose "
    "another --port)",
    errno.EACCES: "permission denied (ports below 1024 need privileges)",
    errno.EADDRNOTAVAIL: "no such address on this machine (check --host)",
}


def _listen_failure(host: str, port: int, error: OSError) -> str:
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if isinstance(error, socket.gaierror):
        reason = f"unknown host {host!r}"
    else:
        reason = _LISTEN_REASONS.get(error.errno or 0) or error.strerror or str(error)
    return f"cannot listen on {where}: {reason}"


def _curl_hint(url: str) -> str:
    return (
        "try it:\n"
        f"  curl -s {url} -H 'content-type: application/json' "
        "-H 'accept: application/json, text/event-stream' -H 'mcp-protocol-version: 2026-07-28' "
        "-H 'mcp-method: tools/call' -H 'mcp-name: echo' "
        '-d \'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",'
        '"arguments":{"text":"hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":'
        '"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}\''
    )


# ------------------------------------------------------------------------------------- targets


def _target(args: argparse.Namespace) -> str | list[str]:
    """The URL, or the argv of ``--stdio``.

    Raises:
        CliError: (`Exit.USAGE`) neither given, a URL that is not http(s), a bad command line.
    """
    if args.stdio:
        try:
            return shlex.split(args.stdio)
        except ValueError as exc:
            raise CliError(Exit.USAGE, f"--stdio {args.stdio!r}: {exc}") from None
    if not args.url:
        raise CliError(Exit.USAGE, "give a URL or --stdio COMMAND")
    url = str(args.url)
    try:
        parts = urlsplit(url)
        valid = parts.scheme in ("http", "https") and bool(parts.hostname)
        parts.port  # noqa: B018 -- raises ValueError for a port that is not a number in range
    except ValueError:
        valid = False
    if not valid:
        raise CliError(
            Exit.USAGE, f"not an http:// or https:// URL: {url!r} (or give --stdio COMMAND)"
        )
    return url


def _value(text: str) -> Any:
    """A ``key=value`` value: JSON when it parses (numbers, booleans, objects), else text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _pairs(pairs: list[str], what: str) -> dict[str, str]:
    """``key=value`` texts as a dict.

    Raises:
        CliError: (`Exit.USAGE`) an item without ``=``.
    """
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise CliError(Exit.USAGE, f"{what} are key=value, got {pair!r}")
        out[key] = value
    return out


# -------------------------------------------------------------------------------- elicitation


class Terminal:
    """Questions on the terminal: prompts on stderr, answers read from stdin, one at a time."""

    def __init__(self) -> None:
        self.lock = trio.Lock()

    async def line(self, prompt: str) -> str | None:
        """The line typed after ``prompt`` (without its line end); None at end of input."""
        sys.stderr.write(prompt)
        sys.stderr.flush()
        text = await trio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True)
        return None if text == "" else text.rstrip("\r\n")

    async def action(self, prompt: str) -> str:
        """``accept``, ``decline`` or ``cancel``, asked until one is given (end of input
        cancels; an empty line accepts)."""
        while True:
            text = await self.line(f"{prompt}[A]ccept, [d]ecline or [c]ancel? ")
            if text is None:
                return "cancel"
            action = _ACTIONS.get(text.strip().lower())
            if action is not None:
                return action

    async def form(self, params: dict[str, Any]) -> dict[str, Any]:
        """Ask for each property of the requested schema; the elicitation result."""
        schema = params.get("requestedSchema") or {}
        properties: dict[str, Any] = schema.get("properties") or {}
        required = set(schema.get("required") or ())
        async with self.lock:
            sys.stderr.write(f"mcpfast: the server asks: {params.get('message', '')}\n")
            action = await self.action("  ")
            if action != "accept":
                return {"action": action}
            content = {}
            for name, prop in properties.items():
                value = await self.field(name, prop, name in required)
                if value is _CANCELLED:
                    return {"action": "cancel"}
                if value is not _SKIPPED:
                    content[name] = value
            return {"action": "accept", "content": content}

    async def field(self, name: str, prop: dict[str, Any], required: bool) -> Any:
        """The value typed for one property, converted to its type; `_SKIPPED` for an empty
        optional one, `_CANCELLED` at end of input."""
        label = str(prop.get("title") or name)
        about = f" -- {prop['description']}" if prop.get("description") else ""
        default = prop.get("default")
        notes = [describe_type(prop)] + (["required"] if required else [])
        if default is not None:
            notes.append(f"default {json.dumps(default)}")
        prompt = f"  {label}{about} ({', '.join(notes)}): "
        while True:
            text = await self.line(prompt)
            if text is None:
                return _CANCELLED
            if text == "":
                if default is not None:
                    return default
                if not required:
                    return _SKIPPED
                sys.stderr.write("    required\n")
                continue
            try:
                return convert(text, prop)
            except ValueError as exc:
                sys.stderr.write(f"    {exc}\n")

    async def visit(self, params: dict[str, Any]) -> dict[str, Any]:
        """A URL-mode elicitation: show the URL, ask whether it was done."""
        async with self.lock:
            sys.stderr.write(
                f"mcpfast: the server asks: {params.get('message', '')}\n"
                f"  open {params.get('url', '')}\n"
            )
            return {"action": await self.action("  once done: ")}


_SKIPPED = object()
_CANCELLED = object()
_ACTIONS = {
    **dict.fromkeys(("", "a", "accept", "y", "yes"), "accept"),
    **dict.fromkeys(("d", "decline", "n", "no"), "decline"),
    **dict.fromkeys(("c", "cancel"), "cancel"),
}


def describe_type(prop: dict[str, Any]) -> str:
    """A property's type in words: ``string``, ``integer``, ``one of a, b``, ``yes/no``..."""
    choices = _choices(prop)
    if choices:
        return "one of " + ", ".join(str(c) for c in choices)
    kind = prop.get("type", "string")
    if kind == "boolean":
        return "yes/no"
    if kind == "array":
        items = _choices(prop.get("items") or {})
        return "comma-separated" + (" of " + ", ".join(map(str, items)) if items else "")
    return str(kind)


def _choices(prop: dict[str, Any]) -> list[Any]:
    if isinstance(prop.get("enum"), list):
        return list(prop["enum"])
    options = prop.get("oneOf") or prop.get("anyOf")
    if isinstance(options, list):
        return [o["const"] for o in options if isinstance(o, dict) and "const" in o]
    return []


_TRUE = ("y", "yes", "true", "1", "on")
_FALSE = ("n", "no", "false", "0", "off")


def convert(text: str, prop: dict[str, Any] | None) -> Any:
    """``text`` as a value of the schema property ``prop`` (JSON-ish when there is none).

    Raises:
        ValueError: the text is not such a value (the message says what is expected).
    """
    if prop is None:
        return _value(text)
    kind = prop.get("type", "string")
    if kind == "array":
        return [convert(part.strip(), prop.get("items") or {}) for part in text.split(",")]
    value: Any = text
    if kind == "integer":
        try:
            value = int(text)
        except ValueError:
            raise ValueError(f"expected an integer, got {text!r}") from None
    elif kind == "number":
        try:
            value = int(text) if text.lstrip("-").isdigit() else float(text)
        except ValueError:
            raise ValueError(f"expected a number, got {text!r}") from None
    elif kind == "boolean":
        if text.lower() not in _TRUE + _FALSE:
            raise ValueError(f"expected yes or no, got {text!r}")
        value = text.lower() in _TRUE
    choices = _choices(prop)
    if choices and value not in choices:
        raise ValueError(f"expected one of {', '.join(map(str, choices))}, got {text!r}")
    return value


class Answers:
    """Answers the server's elicitations for ``mcpfast call``: from ``--answer`` /
    ``--answer-file`` when they cover the required fields, else on the terminal when stdin is
    one, else not at all. An elicitation that cannot be answered (or a bad ``--answer``)
    cancels `scope` and is kept in `failure`: the call then ends with it."""

    def __init__(self, given: dict[str, Any] | None, terminal: Terminal | None) -> None:
        self.given = given
        self.terminal = terminal
        self.scope: trio.CancelScope | None = None
        self.failure: CliError | None = None

    async def elicit(self, params: dict[str, Any]) -> dict[str, Any]:
        """The ``on_elicit`` handler."""
        try:
            return await self._answer(params)
        except CliError as exc:
            self.failure = self.failure or exc
            if self.scope is not None:
                self.scope.cancel()
            return {"action": "cancel"}

    async def _answer(self, params: dict[str, Any]) -> dict[str, Any]:
        if params.get("mode") == "url":
            if self.terminal is None:
                raise CliError(
                    Exit.INPUT_REQUIRED,
                    f"the server asks you to open {params.get('url')} "
                    f"({params.get('message', '')}): run mcpfast call on a terminal",
                )
            return await self.terminal.visit(params)
        schema = params.get("requestedSchema") or {}
        properties: dict[str, Any] = schema.get("properties") or {}
        required = [str(r) for r in schema.get("required") or ()]
        if self.given is not None:
            content = self._given_content(properties)
            if all(r in content for r in required) and (content or not properties):
                return {"action": "accept", "content": content}
        if self.terminal is not None:
            return await self.terminal.form(params)
        missing = [r for r in required if r not in (self.given or {})] or list(properties)
        fields = ", ".join(f"{n} ({describe_type(properties.get(n) or {})})" for n in missing)
        flag = f"--answer {missing[0]}=VALUE" if missing else "--answer KEY=VALUE"
        raise CliError(
            Exit.INPUT_REQUIRED,
            f"the server asks {params.get('message', '')!r} for {fields or 'an answer'} and "
            f"stdin is not a terminal: answer with {flag} (repeatable) or --answer-file FILE.json",
        )

    def _given_content(self, properties: dict[str, Any]) -> dict[str, Any]:
        """The given answers for these properties (all of them when the schema names none),
        texts converted to the properties' types."""
        content = {}
        for key, value in (self.given or {}).items():
            if properties and key not in properties:
                continue
            if not isinstance(value, str):
                content[key] = value
                continue
            try:
                content[key] = convert(value, properties.get(key))
            except ValueError as exc:
                raise CliError(Exit.USAGE, f"--answer {key}: {exc}") from None
        return content


def _given_answers(args: argparse.Namespace) -> dict[str, Any] | None:
    """``--answer-file`` (a JSON object) updated with ``--answer`` pairs; None if neither.

    Raises:
        CliError: (`Exit.USAGE`) an unreadable file, not a JSON object, a pair without ``=``.
    """
    if not args.answer_file and not args.answer:
        return None
    given: dict[str, Any] = {}
    if args.answer_file:
        try:
            loaded = json.loads(Path(args.answer_file).read_text())
        except (OSError, ValueError) as exc:
            raise CliError(Exit.USAGE, f"--answer-file {args.answer_file}: {exc}") from None
        if not isinstance(loaded, dict):
            raise CliError(Exit.USAGE, f"--answer-file {args.answer_file}: not a JSON object")
        given.update(loaded)
    given.update(_pairs(args.answer, "answers"))
    return given


def show_progress(params: dict[str, Any]) -> None:
    """A progress notification as one stderr line: ``progress 3/5 step 3 of 5``."""
    total = params.get("total")
    message = params.get("message")
    text = f"progress {_number(params.get('progress'))}"
    if total is not None:
        text += f"/{_number(total)}"
    if message:
        text += f" {message}"
    print(text, file=sys.stderr, flush=True)


def _number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# ------------------------------------------------------------------------------ inspect, call


class _Doing:
    """What a client command is waiting for, to say so if it times out or fails."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.target = args.url or args.stdio or ""
        self.timeout: float = args.timeout
        self.what = "connecting"


async def _inspect(args: argparse.Namespace, doing: _Doing) -> int:
    async with connect(_target(args), args.era, timeout=args.timeout) as client:
        if client.era == "modern" and client.discover_result is None:
            doing.what = "server/discover"
            await _discover(client, doing)
        doing.what = "listing tools"
        tools = await client.list_tools() if "tools" in client.server_capabilities else []
        report: dict[str, Any] = {
            "era": client.era,
            "protocolVersion": client.protocol_version,
            "serverInfo": client.server_info,
            "capabilities": client.server_capabilities,
            "instructions": client.instructions,
            "tools": [msgspec.to_builtins(t) for t in tools],
        }
        if client.dropped_tools:
            report["droppedTools"] = client.dropped_tools
    print(json.dumps(report, indent=2, ensure_ascii=False))
    return Exit.OK


async def _discover(client: Any, doing: _Doing) -> None:
    """``server/discover`` (``--era modern`` skips the probe that would have called it).

    Raises:
        CliError: (`Exit.USAGE`) the server refused it: it does not speak 2026-07-28.
    """
    try:
        await client.discover()
    except (MCPError, TransportError) as exc:
        if isinstance(exc, TransportError) and exc.status == 0:
            raise
        raise CliError(
            Exit.USAGE,
            f"{doing.target} does not speak 2026-07-28 (server/discover: {exc}); "
            "try --era legacy or --era auto",
        ) from None


async def _call(args: argparse.Namespace, doing: _Doing) -> int:
    arguments = {k: _value(v) for k, v in _pairs(args.arguments, "arguments").items()}
    answers = Answers(_given_answers(args), Terminal() if _interactive() else None)
    target = _target(args)
    async with connect(target, args.era, timeout=args.timeout, on_elicit=answers.elicit) as client:
        doing.what = "listing tools"
        await client.list_tools()
        doing.what = f"calling {args.tool}"
        with trio.CancelScope() as scope:
            answers.scope = scope
            result = await client.call_tool(args.tool, arguments, progress=show_progress)
    if answers.failure is not None:  # it cancelled the call
        raise answers.failure
    for block in result.content:
        text = getattr(block, "text", None)
        print(text if isinstance(text, str) else json.dumps(msgspec.to_builtins(block)))
    if result.structuredContent is not msgspec.UNSET and args.json:
        print(json.dumps(result.structuredContent))
    return Exit.TOOL_ERROR if result.isError else Exit.OK


def _interactive() -> bool:
    return sys.stdin is not None and sys.stdin.isatty()


def _client_command(args: argparse.Namespace, run: Any) -> int:
    doing = _Doing(args)
    try:
        return int(trio.run(run, args, doing))
    except BaseException as exc:
        failure = client_failure(exc, doing)
        if failure is None:
            raise
        raise failure from None


# --------------------------------------------------------------------------- failures, in words

_SERVER_REQUESTS = ("elicitation/create", "sampling/createMessage", "roots/list")


def client_failure(exc: BaseException, doing: _Doing) -> CliError | None:
    """The `CliError` for what ended a client command, or None for a bug (a traceback).

    In a group, an interrupt wins; else the first failure that has a name."""
    leaves = [e for e in _leaves(exc) if not isinstance(e, trio.Cancelled)]
    if any(isinstance(e, KeyboardInterrupt) for e in leaves):
        return CliError(Exit.INTERRUPTED, "interrupted")
    for leaf in leaves:
        failure = _named(leaf, doing)
        if failure is not None:
            return failure
    return None


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc


def _links(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what it was raised from or during, groups included."""
    stack, seen = [exc], set()
    while stack:
        link = stack.pop()
        if id(link) not in seen:
            seen.add(id(link))
            yield link
            stack.extend(e for e in (link.__cause__, link.__context__) if e is not None)
            if isinstance(link, BaseExceptionGroup):
                stack.extend(link.exceptions)


def _named(exc: BaseException, doing: _Doing) -> CliError | None:
    if isinstance(exc, CliError):
        return exc
    if isinstance(exc, trio.TooSlowError | httpx.TimeoutException) or (
        isinstance(exc, TransportError)
        and any(isinstance(e, httpx.TimeoutException) for e in _links(exc))
    ):
        return CliError(
            Exit.TIMEOUT, f"no answer within --timeout {doing.timeout:g}s ({doing.what})"
        )
    if isinstance(exc, httpx.InvalidURL | httpx.UnsupportedProtocol):
        return CliError(Exit.USAGE, f"bad URL {doing.target!r}: {exc}")
    if isinstance(exc, TransportError) and exc.status:
        return CliError(Exit.USAGE, f"{exc} ({doing.what})")
    if isinstance(exc, TransportError | httpx.TransportError):
        return CliError(Exit.CONNECTION, _unreachable(exc, doing))
    if isinstance(exc, MCPError):
        return _refused(exc, doing)
    return None


def _unreachable(exc: BaseException, doing: _Doing) -> str:
    text = str(exc)
    if PLAIN_HTTP in text or SPEAKS_TLS in text:
        return text
    links = list(_links(exc))
    if any(isinstance(e, ConnectionRefusedError) for e in links):
        return f"cannot reach {doing.target}: connection refused (is the server running?)"
    if any(isinstance(e, socket.gaierror) for e in links):
        host = urlsplit(doing.target).hostname
        return f"cannot reach {doing.target}: unknown host {host!r}"
    if isinstance(exc, TransportError):
        return text
    text = text or type(exc).__name__
    if doing.what == "connecting" or isinstance(exc, httpx.ConnectError):
        return f"cannot reach {doing.target}: {text}"
    return f"the connection to {doing.target} failed ({doing.what}): {text}"


def _refused(exc: MCPError, doing: _Doing) -> CliError:
    """A JSON-RPC error: the server refused, or it asked for what we cannot give."""
    if exc.code == -32021:
        data = exc.data if isinstance(exc.data, dict) else {}
        needed = ", ".join(data.get("requiredCapabilities") or {}) or "a capability"
        return CliError(
            Exit.INPUT_REQUIRED,
            f"the server needs {needed} from the client, which mcpfast cannot give "
            f"({exc.message}; {doing.what})",
        )
    method = exc.message.removeprefix("Method not found: ")
    if exc.code == -32601 and method in _SERVER_REQUESTS:
        return CliError(
            Exit.INPUT_REQUIRED, f"the server asked for {method}, which mcpfast cannot answer"
        )
    return CliError(Exit.USAGE, str(exc))


# ---------------------------------------------------------------------------------------- main


def _parser() -> argparse.ArgumentParser:
    common: dict[str, Any] = {
        "epilog": exit_code_table(),
        "formatter_class": argparse.RawDescriptionHelpFormatter,
    }
    parser = argparse.ArgumentParser(prog="mcpfast", description=__doc__, **common)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser(
        "serve", help="serve an mcpfast Server (the demo by default)", **common
    )
    serve.add_argument(
        "target", nargs="?", help="module:attribute or file.py:attribute of a Server"
    )
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--path", default="/mcp")
    serve.add_argument("--workers", type=int, default=1)
    serve.add_argument(
        "--engine",
        choices=("hypercorn", "native"),
        default="hypercorn",
        help="HTTP engine: Hypercorn's Trio worker (default) or mcpfast's own HTTP/1.1 on Trio",
    )
    serve.add_argument("--stdio", action="store_true", help="serve over stdin/stdout")
    for name, text in (
        ("inspect", "show a server's era, version, info, capabilities and tools"),
        ("call", "call a tool and print its result (exit 1 on a tool error)"),
    ):
        sub = commands.add_parser(name, help=text, **common)
        sub.add_argument("url", nargs="?", help="the server's URL")
        sub.add_argument("--stdio", metavar="COMMAND", help="spawn this server command instead")
        sub.add_argument("--era", choices=("auto", "modern", "legacy"), default="auto")
        sub.add_argument("--timeout", type=float, default=30.0, help="seconds (default 30)")
        if name == "call":
            sub.add_argument("tool")
            sub.add_argument("arguments", nargs="*", metavar="key=value")
            sub.add_argument("--json", action="store_true", help="also print structuredContent")
            sub.add_argument(
                "--answer",
                action="append",
                default=[],
                metavar="KEY=VALUE",
                help="answer the server's questions (elicitations) with this field (repeatable)",
            )
            sub.add_argument(
                "--answer-file",
                metavar="FILE",
                help="answer elicitations with this JSON object (--answer adds to it); without "
                "either, questions are asked on the terminal",
            )
    from .load.runner import add_arguments as add_load_arguments

    load = commands.add_parser("load", help="load-test a server with locust (mcpfast[load])")
    add_load_arguments(load)
    return parser


def main(argv: list[str] | None = None) -> int:
    args: Any = _parser().parse_args(argv)
    try:
        return _run(args)
    except CliError as exc:
        print(f"mcpfast: {exc.message}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        print("mcpfast: interrupted", file=sys.stderr)
        return Exit.INTERRUPTED


def _run(args: Any) -> int:
    if args.command == "serve":
        return _serve(args)
    if args.command == "load":
        from .load.runner import run as run_load

        return int(run_load(args))
    if (
        args.command == "call"
        and args.url
        and not args.url.startswith(("http://", "https://"))
        and args.stdio
    ):
        args.arguments.insert(0, args.tool)
        args.tool, args.url = args.url, None
    return _client_command(args, _inspect if args.command == "inspect" else _call)


if __name__ == "__main__":
    raise SystemExit(main())
