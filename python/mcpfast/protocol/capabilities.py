"""Which server capability each client request needs (both eras): a client that respects the
capabilities a server advertised sends nothing else."""

from __future__ import annotations

from typing import Any

from .methods import METHODS


def unadvertised(method: str, capabilities: dict[str, Any]) -> str | None:
    """The capability ``method`` needs that ``capabilities`` lacks, in words; None if none."""
    entry = METHODS.get(method)
    needed = entry.capability if entry is not None else None
    if needed is None:
        return None
    name, flag = needed
    advertised = capabilities.get(name)
    if not isinstance(advertised, dict):
        return f"the {name} capability"
    if flag is not None and not advertised.get(flag):
        return f"{name}.{flag}"
    return None
