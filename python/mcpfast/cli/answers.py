"""What ``mcpfast call`` does with what the server sends during a call: it answers
elicitations (`Answers`: ``--answer``/``--answer-file``, else on the `Terminal`) and shows
progress notifications (`show_progress`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import trio

from .exits import CliError, Exit
from .values import convert, describe_type, parse_pairs


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


def given_answers(args: argparse.Namespace) -> dict[str, Any] | None:
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
    given.update(parse_pairs(args.answer, "answers"))
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
