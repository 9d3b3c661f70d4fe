"""The fast engine's load process: ``python -m mcpfast.load.engine PLAN SHARE OUT`` runs its
share of a plan (`mcpfast.load.fastplan`) and writes its tally (JSON) to ``OUT``.

`run_load` is the Rust engine (``mcpfast._rust.run_load``: one OS thread per connection, blocking
sockets, the GIL released) or, with ``MCPFAST_NO_EXTENSIONS=1`` or no built extension, its Trio
twin (`mcpfast.load.engine_trio`); both take the same arguments and return the same tally.
``BACKEND`` says which one runs.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .engine_trio import Raw

if TYPE_CHECKING or os.environ.get("MCPFAST_NO_EXTENSIONS", "") not in ("", "0"):
    from .engine_trio import run_load

    BACKEND: Literal["rust", "python"] = "python"
else:
    try:
        from .._rust import run_load

        BACKEND = "rust"
    except ImportError:  # a source checkout without a built (or a stale) extension
        from .engine_trio import run_load

        BACKEND = "python"

__all__ = ["BACKEND", "run_load", "tally_document"]


def tally_document(raw: Raw) -> dict[str, Any]:
    """An engine's tally as JSON (bodies in base64), which `mcpfast.load.fast` merges."""
    kinds, late, max_lag_us, elapsed = raw
    return {
        "kinds": [
            {
                "answers": [
                    [status, content_type, base64.b64encode(body).decode(), count]
                    for (status, content_type, body), count in answers.items()
                ],
                "counts": {str(k): v for k, v in counts.items()},
                "sum_us": sum_us,
                "max_us": max_us,
                "errors": errors,
            }
            for answers, counts, sum_us, max_us, errors in kinds
        ],
        "late": late,
        "max_lag_us": max_lag_us,
        "elapsed": elapsed,
        "backend": BACKEND,
    }


def main(argv: list[str]) -> int:
    """Run the share ``argv[1]`` (JSON: ``first`` and ``count`` of the plan's connections,
    ``duration``, ``stages``, ``timeout``) of the plan in file ``argv[0]``; the tally into
    ``argv[2]``."""
    plan = json.loads(Path(argv[0]).read_text())
    share = json.loads(argv[1])
    first, count = int(share["first"]), int(share["count"])
    cycles = [[base64.b64decode(r) for r in c] for c in plan["cycles"][first : first + count]]
    raw = run_load(
        plan["host"],
        int(plan["port"]),
        cycles,
        float(share["duration"]),
        [(float(s), float(r)) for s, r in share["stages"]],
        float(share["timeout"]),
    )
    Path(argv[2]).write_text(json.dumps(tally_document(raw)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
