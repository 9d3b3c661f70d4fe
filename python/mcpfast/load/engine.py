"""The fast engine's load process: ``python -m mcpfast.load.engine PLAN SHARE OUT`` runs its
share of a plan (`mcpfast.load.fastplan`) and writes its tally (JSON) to ``OUT``.

`run_load` is the Rust engine (``mcpfast._rust.run_load``: one OS thread per connection, blocking
sockets, the GIL released) or, with ``MCPFAST_NO_EXTENSIONS=1`` or no built extension, its Trio
twin (`mcpfast.load.engine_trio`); both take the same arguments and return the same tally.
``BACKEND`` says which one runs.

Its stdout is its progress, one JSON line a second (`Reporter`) and a last one with the whole
tally; the first, all zeros, is written once Ctrl-C (SIGINT) is taken over: from then on SIGINT
stops the run at its next second, and the tally so far is still written (``"stopped": true``).
"""

from __future__ import annotations

import base64
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

from .engine_trio import Raw, progress_of

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

__all__ = ["BACKEND", "Reporter", "run_load", "tally_document"]


class Reporter:
    """`run_load`'s ``progress``: each call one JSON line on ``out`` (``elapsed`` seconds;
    ``answered``, ``failed``, ``sum_us``, ``max_us`` so far; ``counts``: the latency buckets of
    the requests answered since the line before); true once SIGINT asked the run to stop. Its
    first line, all zeros, is written at once; `begin` starts the clock of ``elapsed``, `end`
    writes the last line, the tally's."""

    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self.stopped = False
        self.counts: dict[int, int] = {}
        signal.signal(signal.SIGINT, self._stop)
        self.started = time.monotonic()
        self(0, 0, {}, 0, 0)

    def begin(self) -> None:
        """The run starts now."""
        self.started = time.monotonic()

    def end(self, raw: Raw) -> None:
        """The run's last line: its whole tally."""
        self(*progress_of(raw[0]))

    def _stop(self, *_: object) -> None:
        self.stopped = True

    def __call__(
        self, answered: int, failed: int, counts: dict[int, int], sum_us: int, max_us: int
    ) -> bool:
        second = {str(k): v - self.counts.get(k, 0) for k, v in counts.items()}
        self.counts = counts
        line: dict[str, object] = {"elapsed": round(time.monotonic() - self.started, 3)}
        line |= {"answered": answered, "failed": failed}
        line |= {
            "sum_us": sum_us,
            "max_us": max_us,
            "counts": {k: v for k, v in second.items() if v},
        }
        self.out.write(json.dumps(line) + "\n")
        self.out.flush()
        return self.stopped


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
    ``argv[2]``, the progress on stdout."""
    reporter = Reporter(sys.stdout)
    plan = json.loads(Path(argv[0]).read_text())
    share = json.loads(argv[1])
    first, count = int(share["first"]), int(share["count"])
    cycles = [[base64.b64decode(r) for r in c] for c in plan["cycles"][first : first + count]]
    reporter.begin()
    raw = run_load(
        plan["host"],
        int(plan["port"]),
        cycles,
        float(share["duration"]),
        [(float(s), float(r)) for s, r in share["stages"]],
        float(share["timeout"]),
        reporter,
    )
    reporter.end(raw)
    tally = {**tally_document(raw), "stopped": reporter.stopped}
    Path(argv[2]).write_text(json.dumps(tally))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
