"""Load shapes: how many users run at each moment of a run, as pure decisions (no gevent, no I/O).

``mcpfast load --shape SPEC`` (the suite's ``--mcp-shape``) names one:

* ``steady`` (the default): ``--users`` from the start (at ``--spawn-rate``), held. locust runs
  as it does without a shape (the locustfile drops its shape class).
* ``ramp[:over=DURATION]``: from 0 to ``--users`` at an even rate over ``DURATION`` (default:
  the whole ``--run-time``), then held.
* ``spike[:base=N,at=DURATION,for=DURATION]``: ``base`` users (default a fifth of ``--users``,
  at least 1), at ``at`` (default a third of the run) a jump to ``--users`` held ``for``
  (default a fifth of the run, at least 1 s), then back to ``base``.

A duration is a number of seconds with an optional unit: ``500ms``, ``10s``, ``2m``, ``1h``,
``1m30s``. `parse_shape` checks a spec before anything runs; the locustfile's shape class asks
`Shape.tick` once a second (locust's `LoadTestShape`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

__all__ = ["KINDS", "Shape", "parse_duration", "parse_shape"]

KINDS = ("steady", "ramp", "spike")
_PARAMETERS = {"steady": (), "ramp": ("over",), "spike": ("base", "at", "for")}
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
RAMP_STEPS = 120
"""The most steps a ramp of the arrival rate takes (`Shape.rates`)."""
DEFAULT_RUN_SECONDS = 60.0
"""The run's length the defaults are taken from when it has none (``--run-time`` not given)."""


def parse_duration(text: str) -> float:
    """Seconds of ``10``, ``10s``, ``500ms``, ``2m``, ``1m30s``.

    Raises:
        ValueError: not a duration.
    """
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        pass
    if not text or _PART.sub("", text):
        raise ValueError(f"not a duration: {text!r} (e.g. 10s, 500ms, 2m, 1m30s)")
    return sum(float(n) * _UNITS[unit] for n, unit in _PART.findall(text))


@dataclass(frozen=True)
class Shape:
    """A parsed shape: its ``kind`` and the parameters given (None: the default)."""

    kind: str = "steady"
    over: float | None = None
    base: int | None = None
    at: float | None = None
    for_: float | None = None

    def tick(
        self, elapsed: float, users: int, run_seconds: float | None
    ) -> tuple[int, float] | None:
        """The users wanted ``elapsed`` seconds into a run of ``run_seconds`` (None: unbounded)
        with ``--users`` ``users``, and the spawn rate that reaches them: ``(count, rate)``;
        None once the run is over (locust does not apply ``--run-time`` to a shape)."""
        if run_seconds and elapsed >= run_seconds:
            return None
        run = run_seconds or DEFAULT_RUN_SECONDS
        if self.kind == "ramp":
            over = self._over(run)
            return users, users / over if over > 0 else float(users)
        if self.kind == "spike":
            base, at, held = self._spike(users, run)
            rate = float(max(users, base, 1))  # a jump: every user within a second
            return (users if at <= elapsed < at + held else base), rate
        return users, float(max(users, 1))

    def rates(self, rate: float, run_seconds: float, users: int) -> list[tuple[float, float]]:
        """The arrival rate over a run (the fast engine's open loop): stages (seconds, requests
        per second), the last held to the run's end. The shape scales ``rate`` as it scales
        ``users``: a ramp from 0 in `RAMP_STEPS` steps at most (a second each when they fit),
        each at the ramp's mean rate over it; a spike from ``rate * base / users``.

        Raises:
            ValueError: a spike whose base is 0 (no rate to hold).
        """
        if self.kind == "ramp":
            over = self._over(run_seconds)
            steps = min(RAMP_STEPS, max(1, math.ceil(over)))
            ramp = [(over / steps, rate * (k + 0.5) / steps) for k in range(steps)]
            return [*ramp, (max(run_seconds - over, 0.0), rate)]
        if self.kind == "spike":
            base, at, held = self._spike(users, run_seconds)
            if base == 0:
                raise ValueError("spike: base=0 sends nothing; give base= from 1")
            low = rate * base / users
            return [(at, low), (held, rate), (max(run_seconds - at - held, 0.0), low)]
        return [(run_seconds, rate)]

    def _over(self, run: float) -> float:
        return self.over if self.over is not None else run

    def _spike(self, users: int, run: float) -> tuple[int, float, float]:
        """The spike's base users (at most ``users``), its start and how long it holds."""
        base = self.base if self.base is not None else max(1, users // 5)
        at = self.at if self.at is not None else run / 3
        held = self.for_ if self.for_ is not None else max(1.0, run / 5)
        return min(base, users), at, held


def parse_shape(text: str) -> Shape:
    """The `Shape` of ``steady``, ``ramp:over=30s``, ``spike:base=5,at=10s,for=5s``.

    Raises:
        ValueError: an unknown shape or parameter, a bad value, a parameter given twice.
    """
    kind, _, rest = text.strip().partition(":")
    if kind not in KINDS:
        raise ValueError(f"unknown shape {kind!r}: give one of {', '.join(KINDS)}")
    values: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in rest.split(","))):
        key, sep, value = item.partition("=")
        if not sep or key not in _PARAMETERS[kind]:
            known = ", ".join(f"{k}=" for k in _PARAMETERS[kind]) or "none"
            raise ValueError(f"{kind}: unknown parameter {item!r} (it takes {known})")
        if key in values:
            raise ValueError(f"{kind}: {key}= given twice")
        values[key] = value
    base = values.get("base")
    if base is not None and not (base.isdigit() and int(base) >= 0):
        raise ValueError(f"spike: base= must be a whole number of users, got {base!r}")
    durations = {k: parse_duration(values[k]) for k in ("over", "at", "for") if k in values}
    if any(not math.isfinite(v) or v < 0 for v in durations.values()):
        raise ValueError(f"{kind}: durations must be finite and not negative")
    if durations.get("over") == 0 or durations.get("for") == 0:
        raise ValueError(f"{kind}: over= and for= must be longer than 0")
    return Shape(
        kind,
        over=durations.get("over"),
        base=int(base) if base is not None else None,
        at=durations.get("at"),
        for_=durations.get("for"),
    )
