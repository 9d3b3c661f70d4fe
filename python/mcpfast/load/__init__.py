"""Load testing MCP servers: a locust suite (`locustfile`) and the ``mcpfast load`` command
(`runner`), with schema-driven tool arguments (`arguments`) and reports (`report`).

Only `locustfile` imports locust (and so gevent); it runs in a child process of ``mcpfast load``.
"""

from __future__ import annotations

from pathlib import Path

LOCUSTFILE = Path(__file__).with_name("locustfile.py")
"""The suite's path, for ``locust -f``."""
