"""A load run pinned to one protocol revision (``--protocol-version``): the era it implies and
the revision each era's requests ask for. Pure (no gevent): the runner and the probe both use it.

A pinned legacy revision is the one every legacy ``initialize`` of the run offers (the probe
refuses a server that negotiates another); a pinned modern revision is the one every stateless
request carries. The other era's users (`LegacySessionUser` in a modern run) speak that era's
newest revision, as in a run without a pin.
"""

from __future__ import annotations

from ..versions import ALL_VERSIONS, LATEST_LEGACY, MODERN, is_modern


def pinned_era(era: str, version: str) -> str:
    """The era of a run with ``--era`` ``era`` pinned to ``version`` (""): ``era`` unchanged
    when nothing is pinned, else the revision's own era.

    Raises:
        ValueError: ``version`` is not a revision mcpfast speaks, or ``era`` forces the other
            era.
    """
    if not version:
        return era
    if version not in ALL_VERSIONS:
        raise ValueError(
            f"protocol version {version!r} is not one mcpfast speaks "
            f"(it speaks {', '.join(ALL_VERSIONS)})"
        )
    implied = "modern" if is_modern(version) else "legacy"
    if era not in ("auto", implied):
        raise ValueError(f"protocol version {version} is a {implied} revision, not a {era} one")
    return implied


def legacy_offer(version: str) -> str:
    """The revision a legacy ``initialize`` offers in a run pinned to ``version`` ("": none)."""
    return version if version and not is_modern(version) else LATEST_LEGACY


def modern_offer(version: str) -> str:
    """The revision a stateless request speaks in a run pinned to ``version`` ("": none)."""
    return version if version and is_modern(version) else MODERN
