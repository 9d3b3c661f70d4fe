"""An mcpfast server whose every call stalls while a 200 ms pause holds, one pause every two
seconds (a garbage-collection pause, as load generators see one): what an open loop must show in
its tail latency and a closed loop hides (tests/e2e/test_load_fast.py).

python stall_server.py PORT [hypercorn|native]
"""

import sys

import trio

import mcpfast

PAUSE = 0.2
EVERY = 2.0

server = mcpfast.Server("stall", "1.0")
_pause = trio.Lock()
_next = [0.0]


@server.tool(annotations={"readOnlyHint": True})
async def stall() -> str:
    """Answer at once, unless a pause is under way (every call waits for it to end)."""
    now = trio.current_time()
    if now >= _next[0]:
        _next[0] = now + EVERY
        async with _pause:
            await trio.sleep(PAUSE)
    else:
        async with _pause:
            pass
    return "ok"


if __name__ == "__main__":
    engine = sys.argv[2] if len(sys.argv) > 2 else "hypercorn"
    config = mcpfast.Config(port=int(sys.argv[1]), engine=engine)  # type: ignore[arg-type]
    trio.run(mcpfast.serve, server, config)
