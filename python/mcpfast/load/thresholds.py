"""Pass/fail thresholds of a load run (``mcpfast load --fail-on EXPR``), parsed and judged
against its `Summary`.

An expression says when the run fails: ``[NAME:]METRIC OP VALUE[UNIT]``, e.g. ``p99>50ms``,
``errors>0.1%``, ``rps<1000``, ``"tools/call echo:p99>20ms"``.

* ``METRIC``: ``p50``, ``p95``, ``p99``, ``avg``, ``max`` (response times; ``VALUE`` in ``ms``,
  the default, or ``s``); ``errors`` (failed requests as a percentage of requests; the ``%`` is
  optional); ``failures``, ``requests`` (counts); ``rps`` (requests per second);
  ``rate_limited`` (requests the server refused for now, HTTP 429 or -32023: a count, or with
  ``%`` a percentage of requests; on the total only), e.g. ``rate_limited>0``,
  ``rate_limited>5%``.
* ``OP``: ``>``, ``>=``, ``<``, ``<=``.
* ``NAME:`` scopes it to one request name of the summary table (``tools/call echo``); without
  it the threshold is on the total. A name that recorded no request fails its threshold, as
  does a metric that has no value (a percentile of no requests): a run that measured nothing
  does not pass.

Pure: no I/O; `parse` raises `ThresholdError` (a `ValueError`) naming what is wrong.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .report import Row, Summary

__all__ = [
    "EXIT_THRESHOLDS",
    "METRICS",
    "Threshold",
    "ThresholdError",
    "Verdict",
    "evaluate",
    "format_verdicts",
    "parse",
]

EXIT_THRESHOLDS = 4
"""``mcpfast load``'s exit status when a ``--fail-on`` threshold failed."""
TIMES = ("p50", "p95", "p99", "avg", "max")
METRICS = (*TIMES, "errors", "failures", "requests", "rps", "rate_limited")
OPERATORS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
}
UNITS = {"ms": 1.0, "s": 1000.0}

_EXPRESSION = re.compile(
    r"^(?:(?P<name>.*):)?\s*(?P<metric>[a-z0-9_]+)\s*(?P<op>[<>]=?)\s*"
    r"(?P<value>[0-9]+(?:\.[0-9]+)?|\.[0-9]+)\s*(?P<unit>[a-z%/]*)\s*$"
)


class ThresholdError(ValueError):
    """A ``--fail-on`` expression that cannot be parsed; the message says why."""


@dataclass(frozen=True)
class Threshold:
    """``metric op value`` on request ``name`` (None: the total); times in milliseconds,
    ``errors`` (and ``rate_limited`` with ``share``) in percent."""

    text: str
    metric: str
    op: str
    value: float
    name: str | None = None
    share: bool = False
    """``rate_limited`` as a percentage of requests (not a count)."""

    def unit(self) -> str:
        if self.metric in TIMES:
            return "ms"
        return "%" if self.metric == "errors" or self.share else ""


@dataclass(frozen=True)
class Verdict:
    """A threshold judged: ``measured`` is None when the run has no value for it."""

    threshold: Threshold
    measured: float | None
    failed: bool

    def describe(self) -> str:
        """``FAIL p99>50ms: p99 = 73 ms`` (one line)."""
        t = self.threshold
        where = f"{t.name}: " if t.name is not None else ""
        if self.measured is None:
            value = "no requests" if t.name is not None or t.metric in TIMES else "not measured"
        else:
            value = f"{t.metric} = {_number(self.measured)}{' ' + t.unit() if t.unit() else ''}"
        return f"{'FAIL' if self.failed else 'pass'} {t.text}: {where}{value}"


def _number(value: float) -> str:
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.3g}" if abs(value) < 1 else f"{value:.1f}"


def parse(text: str) -> Threshold:
    """The threshold ``text`` says.

    Raises:
        ThresholdError: not ``[NAME:]METRIC OP VALUE[UNIT]``, an unknown metric, a unit that
            does not fit the metric.
    """
    found = _EXPRESSION.match(text.strip())
    if found is None:
        raise ThresholdError(
            f"{text!r} is not [NAME:]METRIC OP VALUE[UNIT] (e.g. p99>50ms, errors>0.1%, rps<1000)"
        )
    metric, unit = found["metric"], found["unit"]
    if metric not in METRICS:
        raise ThresholdError(f"{text!r}: unknown metric {metric!r} (one of {', '.join(METRICS)})")
    value = float(found["value"])
    if metric in TIMES:
        if unit and unit not in UNITS:
            raise ThresholdError(f"{text!r}: {metric} is a time: its unit is ms or s, not {unit!r}")
        value *= UNITS[unit or "ms"]
    elif metric == "errors":
        if unit not in ("", "%"):
            raise ThresholdError(f"{text!r}: errors is a percentage: its unit is %, not {unit!r}")
    elif unit and not (metric == "rate_limited" and unit == "%"):
        raise ThresholdError(f"{text!r}: {metric} takes a plain number, not {unit!r}")
    name = found["name"].strip() if found["name"] is not None else None
    if name == "":
        raise ThresholdError(f"{text!r}: an empty request name before ':'")
    if name is not None and metric == "rate_limited":
        raise ThresholdError(f"{text!r}: rate_limited is on the total only (no NAME:)")
    share = metric == "rate_limited" and unit == "%"
    return Threshold(text.strip(), metric, found["op"], value, name, share=share)


def measure(threshold: Threshold, summary: Summary) -> float | None:
    """The value of ``threshold``'s metric in ``summary`` (None: none to judge)."""
    row: Row | None
    if threshold.name is None:
        row = summary.total
    else:
        row = next((r for r in summary.rows if r.name == threshold.name), None)
    if row is None:
        return 0.0 if threshold.metric in ("requests", "failures", "rate_limited") else None
    if threshold.metric == "rate_limited":
        limited = float(summary.rate_limited)
        if not threshold.share:
            return limited
        return 100.0 * limited / row.requests if row.requests else None
    if threshold.metric == "requests":
        return float(row.requests)
    if threshold.metric == "failures":
        return float(row.failures)
    if not row.requests:
        return None
    if threshold.metric == "errors":
        return 100.0 * row.failures / row.requests
    value: float | None = getattr(row, threshold.metric)
    return value


def evaluate(thresholds: Iterable[Threshold], summary: Summary) -> list[Verdict]:
    """Each threshold judged against ``summary``: failed when its expression holds, or when it
    has nothing to measure (see the module's docstring)."""
    verdicts = []
    for threshold in thresholds:
        measured = measure(threshold, summary)
        failed = measured is None or OPERATORS[threshold.op](measured, threshold.value)
        verdicts.append(Verdict(threshold, measured, failed))
    return verdicts


def format_verdicts(verdicts: Iterable[Verdict]) -> str:
    """One line per verdict, then which failed (empty text for no verdicts)."""
    verdicts = list(verdicts)
    if not verdicts:
        return ""
    lines = ["thresholds:", *("  " + v.describe() for v in verdicts)]
    failed = [v.threshold.text for v in verdicts if v.failed]
    if failed:
        lines.append(f"{len(failed)} of {len(verdicts)} thresholds failed: {', '.join(failed)}")
    else:
        lines.append(f"all {len(verdicts)} thresholds passed")
    return "\n".join(lines)
