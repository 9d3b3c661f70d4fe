"""The fast engine's pure-Python twin, on Trio raw sockets: what ``rust/loadgen.rs`` (`run_load`)
does, with the same arguments, schedule, buckets and tally (`mcpfast.load.engine` picks one).

Each connection is one task with one keep-alive socket, sending its requests (built once, raw
HTTP/1.1 bytes) in turn: closed loop, the next as soon as the answer is in; open loop
(``stages``), request ``n`` of the run (connection ``n % C``) at its scheduled time
`arrival(n)`, its latency counted from then (coordinated omission corrected), and a request sent
more than `LATE_US` after it counted late. Answers are not judged here: identical answers are
counted together (`answer_key`), at most `DISTINCT` kinds per request, and judged once each by
`mcpfast.load.wire.judge` afterwards.

At each whole second of the run, `Progress` is called with the numbers so far; when it returns
true, the run stops early (the requests under way left out) and the tally so far is returned;
when it raises, the run stops and the exception propagates.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import trio

from .hdr import bucket

__all__ = ["DISTINCT", "LATE_US", "Progress", "answer_key", "arrival", "progress_of", "run_load"]

DISTINCT = 64
"""Distinct answers kept per request kind; more are counted as one failure kind."""
TOO_VARIED = f"more than {DISTINCT} distinct answers (the rest unjudged)"
LATE_US = 1000
"""A request sent this much (microseconds) after its scheduled time was sent late."""
_HEAD_LIMIT = 65536

Key = tuple[int, str, bytes]
KindTally = tuple[dict[Key, int], dict[int, int], int, int, dict[str, int]]
Raw = tuple[list[KindTally], int, int, float]
"""What `run_load` returns (the Rust engine's tuple): per request kind (answers by key, bucket
counts, latency sum and max in microseconds, errors by text), late sends, the largest lag
(microseconds), and the seconds the run took."""
Progress = Callable[[int, int, dict[int, int], int, int], object]
"""``progress(answered, failed, counts, sum_us, max_us)``: the run so far, every request kind
together: requests answered, requests failed without an answer, the answered ones per latency
bucket (`mcpfast.load.hdr.bucket`; non-empty buckets only), their latency sum and maximum in
microseconds. A true result stops the run."""


def arrival(n: int, stages: Sequence[tuple[float, float]]) -> float:
    """When request ``n`` (from 0) is due, in seconds from the start: ``stages`` are (seconds,
    requests per second), the last rate held past its end."""
    start = 0.0
    for seconds, rate in stages:
        count = seconds * rate
        if n < count:
            return start + n / rate
        n -= int(count)
        start += seconds
    return start + n / stages[-1][1]


def answer_key(status: int, content_type: str, body: bytes) -> Key:
    """What identical answers share: an SSE body's ``id:`` lines (event ids, which judging never
    reads) left out."""
    if content_type.startswith("text/event-stream"):
        body = b"\n".join(line for line in body.split(b"\n") if not line.startswith(b"id:"))
    return status, content_type, body


def progress_of(kinds: Sequence[KindTally]) -> tuple[int, int, dict[int, int], int, int]:
    """`Progress`'s arguments for a tally's ``kinds`` (a run's so far, or its end)."""
    counts: dict[int, int] = {}
    for _, kind_counts, _, _, _ in kinds:
        for index, count in kind_counts.items():
            counts[index] = counts.get(index, 0) + count
    failed = sum(sum(errors.values()) - errors.get(TOO_VARIED, 0) for *_, errors in kinds)
    sum_us = sum(k[2] for k in kinds)
    max_us = max((k[3] for k in kinds), default=0)
    return sum(counts.values()), failed, dict(sorted(counts.items())), sum_us, max_us


class _Kind:
    __slots__ = ("answers", "counts", "errors", "max_us", "sum_us")

    def __init__(self) -> None:
        self.answers: dict[Key, int] = {}
        self.counts: dict[int, int] = {}
        self.errors: dict[str, int] = {}
        self.sum_us = 0
        self.max_us = 0

    def answered(self, key: Key, micros: int) -> None:
        if key in self.answers or len(self.answers) < DISTINCT:
            self.answers[key] = self.answers.get(key, 0) + 1
        else:
            self.failed(TOO_VARIED)
        index = bucket(micros)
        self.counts[index] = self.counts.get(index, 0) + 1
        self.sum_us += micros
        self.max_us = max(self.max_us, micros)

    def failed(self, text: str) -> None:
        self.errors[text] = self.errors.get(text, 0) + 1


class _Run:
    """The state every connection task shares."""

    def __init__(self, kinds: int, stages: Sequence[tuple[float, float]], duration: float):
        self.kinds = [_Kind() for _ in range(kinds)]
        self.stages = stages
        self.duration = duration
        self.late = 0
        self.max_lag_us = 0
        self.start = trio.current_time()
        self.finished = trio.Event()
        """Set when every connection has sent its last request."""

    def live(self) -> tuple[int, int, dict[int, int], int, int]:
        """`Progress`'s arguments now."""
        return progress_of(
            [(k.answers, k.counts, k.sum_us, k.max_us, k.errors) for k in self.kinds]
        )


async def _read_answer(
    stream: trio.SocketStream, buffer: bytearray
) -> tuple[int, str, bytes, bool]:
    """One HTTP/1.1 response: status, content type, body, and whether the server keeps the
    connection open.

    Raises:
        ValueError: not an HTTP/1.1 response, or the connection closed before its end.
    """
    end = await _fill_until(stream, buffer, b"\r\n\r\n")
    lines = bytes(buffer[:end]).split(b"\r\n")
    del buffer[: end + 4]
    parts = lines[0].split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise ValueError("not an HTTP/1.1 response")
    headers: dict[bytes, bytes] = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    if b"chunked" in headers.get(b"transfer-encoding", b"").lower():
        body = await _chunked(stream, buffer)
    else:
        body = await _exactly(stream, buffer, int(headers.get(b"content-length", b"0")))
    keep = headers.get(b"connection", b"").lower() != b"close"
    return int(parts[1]), headers.get(b"content-type", b"").decode("latin-1"), body, keep


async def _fill_until(stream: trio.SocketStream, buffer: bytearray, mark: bytes) -> int:
    while (at := buffer.find(mark)) < 0:
        if len(buffer) > _HEAD_LIMIT:
            raise ValueError("response head too large")
        data = await stream.receive_some(65536)
        if not data:
            raise ValueError("connection closed")
        buffer += data
    return at


async def _exactly(stream: trio.SocketStream, buffer: bytearray, size: int) -> bytes:
    while len(buffer) < size:
        data = await stream.receive_some(65536)
        if not data:
            raise ValueError("connection closed")
        buffer += data
    body = bytes(buffer[:size])
    del buffer[:size]
    return body


async def _chunked(stream: trio.SocketStream, buffer: bytearray) -> bytes:
    body = bytearray()
    while True:
        end = await _fill_until(stream, buffer, b"\r\n")
        size = int(bytes(buffer[:end]).split(b";")[0].strip() or b"0", 16)
        del buffer[: end + 2]
        if size == 0:
            await _exactly(stream, buffer, 2)  # no trailers: the last CRLF
            return bytes(body)
        body += await _exactly(stream, buffer, size + 2)
        del body[-2:]


async def _connection(
    run: _Run, index: int, count: int, host: str, port: int, cycle: Sequence[bytes], timeout: float
) -> None:
    """Connection ``index`` of ``count``: its requests until the run's end."""
    stream: trio.SocketStream | None = None
    buffer = bytearray()
    sent = 0
    while True:
        n = index + sent * count
        due = run.start + arrival(n, run.stages) if run.stages else trio.current_time()
        if due - run.start >= run.duration:
            break
        await trio.sleep_until(due)
        kind = sent % len(cycle)
        sent += 1
        began = trio.current_time()
        lag = int((began - due) * 1e6)
        if lag > LATE_US:
            run.late += 1
            run.max_lag_us = max(run.max_lag_us, lag)
        try:
            with trio.fail_after(timeout):
                if stream is None:
                    stream = await trio.open_tcp_stream(host, port)
                    buffer.clear()
                await stream.send_all(cycle[kind])
                status, content_type, body, keep = await _read_answer(stream, buffer)
        except (OSError, ValueError, trio.TooSlowError, trio.BrokenResourceError) as exc:
            run.kinds[kind].failed(_error_text(exc))
            await _closed(stream)
            stream = None
            if not run.stages:
                await trio.sleep(0.01)  # a refused connection must not spin
            continue
        micros = int((trio.current_time() - due) * 1e6)
        run.kinds[kind].answered(answer_key(status, content_type, body), micros)
        if not keep:
            await _closed(stream)
            stream = None


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, trio.TooSlowError):
        return "Timeout(no answer in time)"
    return f"{type(exc).__name__}({exc})"


async def _closed(stream: trio.SocketStream | None) -> None:
    if stream is not None:
        await stream.aclose()


async def _connections(
    run: _Run, host: str, port: int, cycles: Sequence[Sequence[bytes]], timeout: float
) -> None:
    async with trio.open_nursery() as nursery:
        for index, cycle in enumerate(cycles):
            nursery.start_soon(_connection, run, index, len(cycles), host, port, cycle, timeout)
    run.finished.set()


async def _ticks(run: _Run, progress: Progress | None, stop: trio.CancelScope) -> None:
    """At each whole second until the run ends, ``progress``; a true result cancels ``stop``."""
    second = 1
    while True:
        with trio.move_on_at(run.start + second):
            await run.finished.wait()
            return
        second += 1
        if progress is not None and progress(*run.live()):
            stop.cancel()
            return


async def _run(
    host: str,
    port: int,
    cycles: Sequence[Sequence[bytes]],
    duration: float,
    stages: Sequence[tuple[float, float]],
    timeout: float,
    progress: Progress | None,
) -> Raw:
    run = _Run(len(cycles[0]), stages, duration)
    started = time.perf_counter()
    raised: list[BaseException] = []
    with trio.CancelScope() as stop:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_connections, run, host, port, cycles, timeout)
            try:
                await _ticks(run, progress, stop)
            except BaseException as exc:  # raised unwrapped below, as the Rust engine does
                raised.append(exc)
                stop.cancel()
    if raised:
        raise raised[0]
    kinds = [(k.answers, k.counts, k.sum_us, k.max_us, k.errors) for k in run.kinds]
    return kinds, run.late, run.max_lag_us, time.perf_counter() - started


def run_load(
    host: str,
    port: int,
    cycles: Sequence[Sequence[bytes]],
    duration: float,
    stages: Sequence[tuple[float, float]],
    timeout: float,
    progress: Progress | None = None,
) -> Raw:
    """Run the load: one connection per cycle (its requests, sent in turn; every cycle the same
    length, request ``i`` of each of the same kind), for ``duration`` seconds, closed loop (no
    ``stages``) or on their schedule; each request given ``timeout`` seconds; ``progress`` at
    each whole second (see `Progress`).

    Raises:
        ValueError: no cycles, an empty one, or cycles of different lengths.
        BaseException: what ``progress`` raised (the run stopped).
    """
    if not cycles or any(len(c) != len(cycles[0]) or not c for c in cycles):
        raise ValueError("cycles must be non-empty and of one length")
    result: Any = trio.run(_run, host, port, cycles, duration, stages, timeout, progress)
    return result  # type: ignore[no-any-return]
