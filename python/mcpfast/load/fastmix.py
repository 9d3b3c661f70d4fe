"""The fast engine's workloads and how its connections and load processes are shared among
them, as pure decisions.

``--mix tools=4,lists=1`` (or ``--user-class`` given more than once: an equal mix) shares the
``--users`` connections among the workloads by weight (`apportion`); each connection runs one
workload's cycle, and each load process one workload's connections (`process_shares`), so that
every process's connections send requests of the same kinds, as the engines need.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .mix import parse_mix
from .options import FAST_WORKLOADS

__all__ = ["apportion", "connections", "process_shares", "workloads"]


def apportion(total: int, weights: Sequence[int]) -> list[int]:
    """``total`` shared by ``weights`` (largest remainders, ties to the first), each at least
    1 (taken from the largest share).

    Raises:
        ValueError: ``total`` is below the number of weights.
    """
    if total < len(weights):
        raise ValueError(f"{total} cannot be shared by {len(weights)} (at least 1 each)")
    whole = sum(weights)
    shares = [total * w // whole for w in weights]
    order = sorted(range(len(weights)), key=lambda i: -(total * weights[i] % whole))
    for i in order[: total - sum(shares)]:
        shares[i] += 1
    for i, share in enumerate(shares):
        if share == 0:
            shares[shares.index(max(shares))] -= 1
            shares[i] = 1
    return shares


def workloads(mix: str, user_classes: Sequence[str] | None) -> dict[str, int]:
    """The workloads of ``--mix`` or ``--user-class`` (repeated: equal weights; none: tools)
    and their weights, in the order given.

    Raises:
        ValueError: a key that is not a fast workload, or a bad weight (`parse_mix`).
    """
    if mix:
        return parse_mix(mix, {key: key for key in FAST_WORKLOADS})
    weights: dict[str, int] = {}
    for key in user_classes or ["tools"]:
        if key not in FAST_WORKLOADS:
            raise ValueError(
                f"not a fast workload: {key!r} (give some of {', '.join(FAST_WORKLOADS)})"
            )
        weights[key] = 1
    return weights


def connections(mix: str, user_classes: Sequence[str] | None, users: int) -> list[list[Any]]:
    """``[workload, connections]`` of each workload: ``users`` shared by the weights.

    Raises:
        ValueError: as `workloads`, or fewer connections than workloads.
    """
    weights = workloads(mix, user_classes)
    if users < len(weights):
        raise ValueError(f"{len(weights)} workloads need --users {len(weights)} at least")
    counts = apportion(users, list(weights.values()))
    return [[key, count] for key, count in zip(weights, counts, strict=True)]


def process_shares(groups: Sequence[int], processes: int) -> list[tuple[int, int, int]]:
    """``(group, first, count)`` of each load process: ``processes`` (at least one per group,
    at most one per connection) shared by the groups' connection counts (``groups``), each
    group's connections (numbered on from the previous group's) split evenly among its
    processes."""
    users = sum(groups)
    processes = max(min(processes, users), len(groups))
    shares, first = [], 0
    for group, (count, share) in enumerate(zip(groups, apportion(processes, groups), strict=True)):
        for index in range(share):
            part = count // share + (1 if index < count % share else 0)
            shares.append((group, first, part))
            first += part
    return shares
