"""`protocol.capabilities` by revision: what a client declares, what a server advertises, what
a request needs, and what a server may not ask a client for."""

from __future__ import annotations

from typing import Any

import pytest

from mcpfast.protocol.capabilities import (
    InputRequest,
    client_capabilities,
    refusal,
    server_capabilities,
    unadvertised,
)

EVERYTHING = {
    "elicit": True,
    "elicit_url": True,
    "sample": True,
    "sampling_tools": True,
    "roots": True,
}


@pytest.mark.parametrize(
    ("version", "declared"),
    [
        ("2025-03-26", {"sampling": {}, "roots": {"listChanged": True}}),
        ("2025-06-18", {"elicitation": {}, "sampling": {}, "roots": {"listChanged": True}}),
        (
            "2025-11-25",
            {
                "elicitation": {"form": {}, "url": {}},
                "sampling": {"tools": {}},
                "roots": {"listChanged": True},
            },
        ),
        (
            "2026-07-28",
            {"elicitation": {"form": {}, "url": {}}, "sampling": {"tools": {}}, "roots": {}},
        ),
    ],
)
def test_client_capabilities_by_revision(version: str, declared: dict[str, Any]) -> None:
    assert client_capabilities(version, **EVERYTHING) == declared


def test_no_handlers_declare_nothing() -> None:
    none = dict.fromkeys(EVERYTHING, False)
    assert client_capabilities("2026-07-28", **none) == {}


@pytest.mark.parametrize(
    ("version", "extra"),
    [
        ("2025-06-18", set()),
        ("2025-11-25", {"tasks"}),
        ("2026-07-28", {"extensions"}),
    ],
)
def test_server_capabilities_by_revision(version: str, extra: set[str]) -> None:
    base = {"tools", "resources", "prompts", "completions", "logging"}
    assert set(server_capabilities(version)) == base | extra


@pytest.mark.parametrize(
    ("method", "advertised", "missing"),
    [
        ("tools/call", {"tools": {}}, None),
        ("tools/call", {}, "the tools capability"),
        ("resources/subscribe", {"resources": {}}, "resources.subscribe"),
        ("resources/subscribe", {"resources": {"subscribe": True}}, None),
        ("ping", {}, None),
        ("unknown/method", {}, None),
    ],
)
def test_unadvertised(method: str, advertised: dict[str, Any], missing: str | None) -> None:
    assert unadvertised(method, advertised) == missing


@pytest.mark.parametrize(
    ("version", "declared", "asked", "refused"),
    [
        ("2025-06-18", {"elicitation": {}}, InputRequest(method="elicitation/create"), None),
        (
            "2025-03-26",
            {"elicitation": {}},
            InputRequest(method="elicitation/create"),
            "2025-06-18",
        ),
        (
            "2025-06-18",
            {"elicitation": {}},
            InputRequest(method="elicitation/create", params={"mode": "url"}),
            "2025-11-25",
        ),
        ("2025-11-25", {}, InputRequest(method="roots/list"), "roots"),
        (
            "2025-11-25",
            {"sampling": {}},
            InputRequest(method="sampling/createMessage", params={"tools": [{}]}),
            "sampling",
        ),
    ],
)
def test_refusal(
    version: str, declared: dict[str, Any], asked: InputRequest, refused: str | None
) -> None:
    error = refusal(version, declared, {"r": asked})
    if refused is None:
        assert error is None
    else:
        assert error is not None and refused in error.message
