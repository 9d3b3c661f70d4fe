"""``mcpfast inspect``: what a server offers (its era, version, info, capabilities, tools,
resources, resource templates and prompts), as JSON (`report`) or as text, one line per item
with its arguments and the first line of its description (`as_text`)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import msgspec

from .client_commands import connected, discover
from .exits import Doing, Exit
from .values import describe_type

LISTS = (
    ("tools", "tools", "list_tools"),
    ("resources", "resources", "list_resources"),
    ("resourceTemplates", "resources", "list_resource_templates"),
    ("prompts", "prompts", "list_prompts"),
)
"""Each list of the report: its key, the capability that offers it, the client's method."""


async def inspect_command(args: argparse.Namespace, doing: Doing) -> int:
    """``mcpfast inspect``: print the `report` on stdout, as text (`as_text`) with
    ``--format text`` (the default on a terminal), else as JSON."""
    async with connected(args, doing) as client:
        if client.era == "modern" and client.discover_result is None:
            doing.what = "server/discover"
            await discover(client, doing)
        report = await _report(client, doing)
    text = args.format == "text" or (args.format is None and sys.stdout.isatty())
    print(as_text(report) if text else json.dumps(report, indent=2, ensure_ascii=False))
    return Exit.OK


async def _report(client: Any, doing: Doing) -> dict[str, Any]:
    """The server as the client sees it; a list the server has no capability for is empty."""
    report: dict[str, Any] = {
        "era": client.era,
        "protocolVersion": client.protocol_version,
        "serverInfo": client.server_info,
        "capabilities": client.server_capabilities,
        "instructions": client.instructions,
    }
    for key, capability, method in LISTS:
        doing.what = f"listing {key}"
        offered = capability in client.server_capabilities
        items = await getattr(client, method)() if offered else []
        report[key] = [msgspec.to_builtins(item) for item in items]
    if client.dropped_tools:
        report["droppedTools"] = client.dropped_tools
    return report


def as_text(report: dict[str, Any]) -> str:
    """The report for a person: a heading, then each non-empty list, one item a line."""
    info = report["serverInfo"]
    lines = [
        f"{info.get('name', '?')} {info.get('version', '')} ({report['era']}, "
        f"protocol {report['protocolVersion']})"
    ]
    if report.get("instructions"):
        lines.append(f"  {_first_line(report['instructions'])}")
    sections = (
        ("tools", [_tool(t) for t in report["tools"]]),
        ("resources", [_resource(r, "uri") for r in report["resources"]]),
        ("resource templates", [_resource(r, "uriTemplate") for r in report["resourceTemplates"]]),
        ("prompts", [_prompt(p) for p in report["prompts"]]),
    )
    for title, items in sections:
        lines += ["", f"{title}:", *items] if items else ["", f"{title}: none"]
    return "\n".join(lines)


def _tool(tool: dict[str, Any]) -> str:
    schema = tool.get("inputSchema") or {}
    required = set(schema.get("required") or ())
    arguments = [
        _argument(f"{name}: {describe_type(prop)}{_default(prop)}", name in required)
        for name, prop in (schema.get("properties") or {}).items()
    ]
    return _line(f"{tool['name']}({', '.join(arguments)})", tool.get("description"))


def _default(prop: dict[str, Any]) -> str:
    return f" = {json.dumps(prop['default'])}" if prop.get("default") is not None else ""


def _resource(resource: dict[str, Any], key: str) -> str:
    mime = f" ({resource['mimeType']})" if resource.get("mimeType") else ""
    return _line(f"{resource[key]}{mime}", resource.get("description"))


def _prompt(prompt: dict[str, Any]) -> str:
    arguments = [
        _argument(a["name"], a.get("required", False)) for a in prompt.get("arguments", [])
    ]
    return _line(f"{prompt['name']}({', '.join(arguments)})", prompt.get("description"))


def _argument(text: str, required: bool) -> str:
    return text if required else f"[{text}]"


def _line(head: str, description: str | None) -> str:
    about = _first_line(description or "")
    return f"  {head}" + (f" -- {about}" if about else "")


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0].strip() if lines else ""
