"""Weighted mixes of user classes: ``--mix tools=4,churn=1,session=2``, as pure decisions.

Each key names a user class (`mcpfast.load.options.USER_CLASSES`) and its weight, a whole number
from 1; only the classes named run, sharing the users by their weights (locust's own
``--config-users`` sets them, so a plain locust run takes the same JSON).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

__all__ = ["config_users", "parse_mix"]


def parse_mix(text: str, classes: Mapping[str, str]) -> dict[str, int]:
    """The user class -> weight of ``key=weight,...`` (``classes``: key -> user class), in the
    order given.

    Raises:
        ValueError: empty, an unknown key, a key given twice, a weight that is not a whole
            number from 1.
    """
    out: dict[str, int] = {}
    for item in (part.strip() for part in text.split(",")):
        key, sep, weight = item.partition("=")
        key = key.strip()
        if key not in classes:
            raise ValueError(f"unknown user class {key!r}: give some of {', '.join(classes)}")
        if not sep or not weight.strip().isdigit() or int(weight) < 1:
            raise ValueError(f"{key}: the weight must be a whole number from 1, got {item!r}")
        if classes[key] in out:
            raise ValueError(f"{key} given twice")
        out[classes[key]] = int(weight)
    return out


def config_users(weights: Mapping[str, int]) -> str:
    """locust's ``--config-users`` JSON setting these weights."""
    return json.dumps([{"user_class_name": name, "weight": w} for name, w in weights.items()])
