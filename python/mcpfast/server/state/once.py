"""`OnceClaims`: things claimed once for a while, in memory, with a bound per owner (the
in-process `Bus.claim_once`, and the DPoP verifier's memory where there is no bus)."""

from __future__ import annotations

import time
from collections import OrderedDict


class OnceClaims:
    """`Bus.claim_once` in memory. One owner holds at most ``per_owner`` unexpired claims:
    past them its new claims are refused until its oldest expire, and no claim of any owner
    is ever evicted (a forgotten claim could be made again: a replay). Expired claims go, in
    the order they were made, as claims come; an owner left with none is forgotten. So memory
    follows the claims made in the last ``seconds`` (what the callers let through), and one
    owner never holds more than ``per_owner`` of them."""

    def __init__(self, per_owner: int = 100_000) -> None:
        self.per_owner = per_owner
        self._owners: OrderedDict[str, OrderedDict[str, float]] = OrderedDict()
        """Each owner's claims (key -> until when, oldest first), the owner that claimed
        longest ago first."""

    async def claim_once(self, owner: str, key: str, seconds: float) -> bool:
        """`Bus.claim_once` (never waits)."""
        now = time.monotonic()
        self._forget_idle(now)
        claims = self._owners.get(owner)
        if claims is None:
            claims = self._owners[owner] = OrderedDict()
        else:
            self._owners.move_to_end(owner)
        while claims and next(iter(claims.values())) <= now:
            claims.popitem(last=False)
        until = claims.get(key)
        if (until is not None and until > now) or len(claims) >= self.per_owner:
            return False
        claims[key] = now + seconds
        return True

    def _forget_idle(self, now: float) -> None:
        """Forget the owners whose newest claim has expired."""
        owners = self._owners
        while owners:
            claims = next(iter(owners.values()))
            if claims and next(reversed(claims.values())) > now:
                return
            owners.popitem(last=False)
