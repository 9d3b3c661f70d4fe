"""An ASGI app, the bare echo or mcpfast's one-tool ``echo`` server, on Hypercorn's trio worker
with mcpfast's Hypercorn settings, wrapped to measure itself while it serves: per request, the
thread's CPU time inside the app less the time inside its ``receive`` and ``send`` (Hypercorn's
own work, and whatever ran while the app waited), and the Trio task steps of the whole process
and of the app's tasks. SIGUSR1 writes the figures since the last SIGUSR1 to ``OUT`` as JSON.

    python timed_asgi.py PORT bare|mcpfast OUT
"""

import json
import signal
import sys
import time
from pathlib import Path

import trio
from bare_echo import app as bare_app
from hypercorn.trio import serve
from mcpfast_echo import server

import mcpfast
from mcpfast.server.config import Config
from mcpfast.server.serve import hypercorn_config

clock = time.thread_time_ns
figures = {"requests": 0, "app_ns": 0, "steps": 0, "app_steps": 0}
apps: set[trio.lowlevel.Task] = set()


class Steps(trio.abc.Instrument):
    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        figures["steps"] += 1
        if task in apps:
            figures["app_steps"] += 1


def timed(inner):  # type: ignore[no-untyped-def]
    async def app(scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] != "http":
            await inner(scope, receive, send)
            return
        waited = 0

        async def timed_receive():  # type: ignore[no-untyped-def]
            nonlocal waited
            start = clock()
            message = await receive()
            waited += clock() - start
            return message

        async def timed_send(message):  # type: ignore[no-untyped-def]
            nonlocal waited
            start = clock()
            await send(message)
            waited += clock() - start

        # mcpfast takes a body already in Hypercorn's memory channel without a checkpoint
        timed_receive.__self__ = getattr(receive, "__self__", None)  # type: ignore[attr-defined]
        task = trio.lowlevel.current_task()
        apps.add(task)
        start = clock()
        await inner(scope, timed_receive, timed_send)
        figures["app_ns"] += clock() - start - waited
        figures["requests"] += 1
        apps.discard(task)

    return app


async def main(port: int, which: str, out: Path) -> None:
    inner = bare_app if which == "bare" else mcpfast.asgi_app(server)
    trio.lowlevel.add_instrument(Steps())
    async with trio.open_nursery() as nursery:

        async def report() -> None:
            with trio.open_signal_receiver(signal.SIGUSR1) as signals:
                async for _ in signals:
                    said = json.dumps(figures)
                    figures.update(dict.fromkeys(figures, 0))
                    part = trio.Path(f"{out}.part")
                    await part.write_text(said)
                    await part.replace(out)  # whole, for the reader that waits for it

        nursery.start_soon(report)
        await serve(timed(inner), hypercorn_config(Config(port=port)))


if __name__ == "__main__":
    trio.run(main, int(sys.argv[1]), sys.argv[2], Path(sys.argv[3]))
