"""`protocol.initialize`: what a client sends and how it reads the answer."""

from __future__ import annotations

from typing import Any

import pytest

from mcpfast.protocol.capabilities import client_capabilities
from mcpfast.protocol.initialize import Initialized, initialize_params, read_result


def test_params() -> None:
    caps = client_capabilities(
        "2025-11-25", elicit=True, elicit_url=True, sample=False, sampling_tools=False, roots=True
    )
    assert initialize_params("2025-11-25", caps, {"name": "c"}) == {
        "protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {"form": {}, "url": {}}, "roots": {"listChanged": True}},
        "clientInfo": {"name": "c"},
    }


@pytest.mark.parametrize(
    ("result", "read"),
    [
        (
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "s", "version": "1"},
                "instructions": "hi",
            },
            Initialized(
                version="2025-06-18",
                capabilities={"tools": {}},
                server_info={"name": "s", "version": "1"},
                instructions="hi",
            ),
        ),
        ({}, Initialized(version="2025-11-25")),
        (None, Initialized(version="2025-11-25")),
        (
            {"protocolVersion": 7, "capabilities": [], "serverInfo": "s", "instructions": 1},
            Initialized(version="2025-11-25"),
        ),
    ],
)
def test_read_result(result: Any, read: Initialized) -> None:
    assert read_result(result, "2025-11-25") == read
