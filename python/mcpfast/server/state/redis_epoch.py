"""How a `RedisBus` notices that Redis lost what it held (`Epoch`), gives back what survived
(`Recovery`), and keeps its worker's lease.

Redis holds ``<prefix>epoch`` (``"<Unix seconds> <random>"``), written by the first worker
that finds none (``SET NX``). It lives exactly as long as the data set: a restart that reloads
persisted data (RDB snapshot, append-only file) keeps it; a restart empty or a ``FLUSHALL``
loses it, and the next worker to look (at every lease renewal, at every reconnection, at every
read of a session Redis holds nothing of) writes a new one: a new epoch. Redis's own ``run_id``
would not do: it changes at every restart and failover whether anything was lost or not, and
not at a ``FLUSHALL``. A failover to a replica that missed the last writes keeps the epoch:
what it missed is given back at the reconnection such a failover causes, by the same restore.

On a new epoch, and after every reconnection, each worker writes back the session records its
mirror holds (`Mirror.copies`), each only where Redis holds nothing of that session (never over
a newer record, never over an ending), and broadcast as a save is; on a new epoch also a record
of the use of each session it read none of (`restorable`), which had no state to lose. A
session started before the epoch whose record Redis still lacks `RESTORE_SECONDS` after the
epoch began held state no surviving copy kept (`Recovery.lost`). Sessions are dated to the
second: one started in the second the epoch began counts as started after it.

A worker's lease is ``<prefix>lease:<worker>``, written with a `WORKER_LEASE_SECONDS` expiry
at every renewal (`LEASE_RENEW_SECONDS`). A worker without one is dead (`Recovery.alive`) only
to a worker whose own renewals have all succeeded for `WORKER_LEASE_SECONDS`: after Redis was
away, frozen or emptied (a new epoch), every lease may have lapsed while its worker lives."""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any

import coredis
import msgspec
import trio

from ...errors import BusUnavailable
from . import redis_scripts as scripts
from .bus import WORKER_LEASE_SECONDS
from .redis_connect import Client
from .redis_sessions import Mirror, SessionNote, restorable

RESTORE_SECONDS = 3.0
"""How long after a new epoch began the workers may still be writing back their copies: a
session's missing record is judged lost only after it (each worker looks at least once a lease
renewal, `LEASE_RENEW_SECONDS`, and writes back its copies 16 at a time)."""

ABSENT_SECONDS = 600.0
"""How long a given-back record of a session's use is kept, at least (the longest expiry seen
given to a record, if longer): whether the session expired is judged by its ``seen``."""

log = logging.getLogger("mcpfast.bus")

Call = Callable[[Callable[[Client], Awaitable[Any]]], Awaitable[Any]]
"""`RedisBus._call`: one bounded request."""


class Epoch:
    """The epoch this bus last saw, when it began, and whether a look at Redis is due."""

    __slots__ = ("due", "settled", "since", "value")

    def __init__(self) -> None:
        self.value: bytes | None = None
        self.since = 0
        """When the epoch began (Unix seconds, the clock of the worker that wrote it)."""
        self.settled = 0.0
        """When every worker has written back its copies (`trio.current_time`)."""
        self.due = trio.Event()
        """Set when Redis answered no epoch, or after a reconnection: look (and write back)."""

    def adopt(self, value: bytes | None) -> bool:
        """Take the epoch Redis holds; True when it is a new one, so Redis lost its data since
        this bus last looked (never at the first look)."""
        if value is None:
            self.due.set()
            return False
        value = bytes(value)
        if value == self.value:
            return False
        first = self.value is None
        self.value = value
        self.since = int(value.partition(b" ")[0])
        wait = self.since + RESTORE_SECONDS - time.time()
        self.settled = trio.current_time() + max(0.0, min(RESTORE_SECONDS, wait))
        if not first:
            self.due.set()
        return not first


class Recovery:
    """A `RedisBus`'s epoch, its write-backs and its worker's lease."""

    def __init__(
        self,
        call: Call,
        mirror: Mirror,
        prefix: str,
        worker: str,
        session_keys: Callable[[str], list[str]],
    ) -> None:
        self._call = call
        self._mirror = mirror
        self._epoch_key = prefix + "epoch"
        self._lease_prefix = prefix + "lease:"
        self._lease_key = self._lease_prefix + worker
        self._channel = prefix + "sessions"
        self._session_keys = session_keys
        self.epoch = Epoch()
        self._steady: float | None = None
        """Since when (monotonic) every look at Redis succeeded and the epoch stayed (None:
        the last one failed)."""
        self._absent_due = False
        """Whether the next write-back gives back the use of sessions read without a record
        too (a new epoch began since the last)."""
        self.durable: bool | None = None
        """Whether Redis keeps its data across a restart (None: it would not say)."""

    def lose(self) -> None:
        """The pub/sub connection was lost: keep the mirror as copies, look once back."""
        self._mirror.lose()
        self._steady = None
        self.epoch.due.set()

    async def first_look(self) -> None:
        """At attach: take the epoch and whether Redis persists its data (the epoch again
        once Redis is back, when it is away now)."""
        try:
            await self.look()
            await self.check_persistence()
        except BusUnavailable:
            self.epoch.due.set()

    async def look(self, lease_seconds: float = 0.0) -> None:
        """Renew this worker's lease (for ``lease_seconds`` > 0) and take the epoch (writing
        one when Redis holds none); a new one makes the write-back due (`run`).

        Raises:
            BusUnavailable: Redis is away.
        """
        value = f"{int(time.time())} {secrets.token_hex(8)}".encode()
        try:
            if lease_seconds > 0:
                px = max(1, int(lease_seconds * 1000))
                await self._call(lambda c: c.set(self._lease_key, b"1", px=px))
            found = await self._call(
                lambda c: c.set(self._epoch_key, value, condition=coredis.PureToken.NX, get=True)
            )
        except BusUnavailable:
            self._steady = None
            raise
        if self._adopt(value if found is None else found) or self._steady is None:
            self._steady = time.monotonic()

    async def missed(self) -> bool:
        """Redis held nothing of a session this bus read: take the epoch now (one read);
        whether it is still the one this bus knew (else the read tells of no time before)."""
        value = await self._call(lambda c: c.get(self._epoch_key))
        known = self.epoch.value
        self._adopt(value)
        return value is not None and bytes(value) == known

    def _adopt(self, value: bytes | None) -> bool:
        if not self.epoch.adopt(value):
            return False
        self._absent_due = True
        log.warning(
            "Redis lost its data (a new epoch began): giving back the %d session records "
            "this worker holds",
            len(self._mirror.copies()),
        )
        return True

    async def _write_back(self) -> None:
        """Write back every copy Redis lacks, 16 at a time (after a new epoch, the use of the
        sessions read without a record too)."""
        now = time.monotonic()
        new, self._absent_due = self._absent_due, False
        absent = max(self._mirror.ttl, ABSENT_SECONDS) if new else 0.0
        limiter = trio.CapacityLimiter(16)
        async with trio.open_nursery() as nursery:
            for session_id, known in self._mirror.copies():
                kept = restorable(known, now, absent)
                if kept is not None:
                    nursery.start_soon(self._restore, limiter, session_id, *kept)
        self._mirror.restored()

    async def _restore(
        self, limiter: trio.CapacityLimiter, session_id: str, record: Any, seconds: float
    ) -> None:
        ttl = max(1, int(seconds * 1000))
        note = msgspec.json.encode(SessionNote(session_id, ttl, record))
        flag = "1" if record.ended else "0"
        args = (flag, ttl, msgspec.json.encode(record), self._channel, note)
        keys = self._session_keys(session_id)
        async with limiter:
            await self._call(lambda c: scripts.RESTORE_SESSION(keys, args, client=c))

    async def run(self, wait_up: Callable[[], Awaitable[None]]) -> None:
        """Whenever it is due (a reconnection, a new or missing epoch), once Redis is back:
        take the epoch, then write the copies back."""
        while True:
            await self.epoch.due.wait()
            await wait_up()
            try:
                await self.look()
                self.epoch.due = trio.Event()
                await self._write_back()
            except BusUnavailable:
                self.epoch.due.set()
                await trio.sleep(0.1)

    async def lost(self, started: int) -> bool:
        """Whether a session started at ``started`` (Unix seconds) that Redis holds no record
        of may have held state Redis lost: started before the epoch; returns once the workers
        had the time to write back their copies (`RESTORE_SECONDS` after the epoch began, at
        most).

        Raises:
            BusUnavailable: the epoch is not known and Redis is away.
        """
        if self.epoch.value is None or self.epoch.due.is_set():
            await self.look()
        if started >= self.epoch.since:
            return False
        await trio.sleep_until(self.epoch.settled)
        return True

    async def alive(self, worker: str) -> bool:
        """Whether ``worker``'s lease holds, or this worker cannot tell yet (its own renewals
        have not all succeeded for `WORKER_LEASE_SECONDS`).

        Raises:
            BusUnavailable: Redis is away.
        """
        steady = self._steady
        if steady is None or time.monotonic() - steady < WORKER_LEASE_SECONDS:
            return True
        return bool(await self._call(lambda c: c.exists([self._lease_prefix + worker])))

    async def check_persistence(self) -> None:
        """Learn whether Redis persists its data (``CONFIG GET appendonly save``), and log at
        warning level when it does not: a restart then loses every session record."""
        try:
            config = await self._call(lambda c: c.config_get(["appendonly", "save"]))
        except BusUnavailable:
            return  # away, or CONFIG refused (a managed Redis): unknown
        try:
            values = {bytes(k).decode(): bytes(v).decode() for k, v in dict(config).items()}
        except (TypeError, ValueError):
            return  # a reply of another shape (a Cluster's, per node): unknown
        self.durable = values.get("appendonly") == "yes" or bool(values.get("save"))
        if not self.durable:
            log.warning(
                'the bus\'s Redis keeps no data across a restart (appendonly no, save ""): '
                "session records only survive in the workers' copies (docs/scaling.md)"
            )
