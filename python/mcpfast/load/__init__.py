"""Load testing MCP servers: a locust suite (`locustfile`) and the ``mcpfast load`` command
(`runner`: its options are one table, `options`, rendered by `command`; the locust process is
run by `processes`), with schema-driven tool arguments (`arguments`) and reports (`report`).

Only `locustfile` imports locust (and so gevent); it runs in a child process of ``mcpfast load``.
"""

from __future__ import annotations

from pathlib import Path

LOCUSTFILE = Path(__file__).with_name("locustfile.py")
"""The suite's path, for ``locust -f``."""

PROGRESS_PREFIX = "MCPFAST-PROGRESS "
"""The suite's progress lines on stdout (``--mcp-progress``): this, then a JSON object."""
NOTE_PREFIX = "MCPFAST-NOTE "
"""The suite's notes on stdout (``--mcp-progress``): this, then one line of text (a skipped user
class, a class stopped at run time, the first failure of each kind)."""
EXIT_NOTHING_TO_RUN = 3
"""The suite's exit status when no user class can run, or the server did not answer the probe."""
