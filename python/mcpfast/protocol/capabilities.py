"""Which server capability each client request needs (both eras): a client that respects the
capabilities a server advertised sends nothing else."""

from __future__ import annotations

from typing import Any

SERVER_CAPABILITY: dict[str, tuple[str, str | None]] = {
    "tools/list": ("tools", None),
    "tools/call": ("tools", None),
    "prompts/list": ("prompts", None),
    "prompts/get": ("prompts", None),
    "resources/list": ("resources", None),
    "resources/templates/list": ("resources", None),
    "resources/read": ("resources", None),
    "resources/subscribe": ("resources", "subscribe"),
    "resources/unsubscribe": ("resources", "subscribe"),
    "completion/complete": ("completions", None),
    "logging/setLevel": ("logging", None),
}
"""A method, and the capability (with the flag inside it, if one) a server must advertise."""


def unadvertised(method: str, capabilities: dict[str, Any]) -> str | None:
    """The capability ``method`` needs that ``capabilities`` lacks, in words; None if none."""
    needed = SERVER_CAPABILITY.get(method)
    if needed is None:
        return None
    name, flag = needed
    advertised = capabilities.get(name)
    if not isinstance(advertised, dict):
        return f"the {name} capability"
    if flag is not None and not advertised.get(flag):
        return f"{name}.{flag}"
    return None
