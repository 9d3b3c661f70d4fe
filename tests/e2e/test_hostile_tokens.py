"""Signing keys across restarts (issue 17, item 5): a session id and a ``requestState`` minted
with key ``k1`` stay valid on a server restarted with ``MCPFAST_KEYS=k2,k1`` (k2 signs, k1 still
verifies), and are refused once k1 is retired (``MCPFAST_KEYS=k2``) or by another deployment's
keys: a session with 404 -32001, a ``requestState`` with -32602, each naming the reason. Real
``mcpfast serve`` processes (the demo server) on both engines, keys from the environment."""

from __future__ import annotations

import base64
from contextlib import AbstractAsyncContextManager
from typing import Any

import httpx2
import pytest

from ..helpers import Wire, meta
from .processes import free_port, mcpfast_command, server_process

ENGINES = pytest.mark.parametrize("engine", ["hypercorn", "native"])
LEGACY = "2025-11-25"


def key(kid: str, secret: bytes) -> str:
    """One ``MCPFAST_KEYS`` entry."""
    return f"{kid}:{base64.urlsafe_b64encode(secret).decode()}"


K1 = key("k1", b"first-signing-key-of-32-bytes!!!")
K2 = key("k2", b"second-signing-key-of-32-bytes!!")
OTHER_K1 = key("k1", b"another deployment's k1 secret!!")
OTHER = key("prod-b", b"another deployment's own secret!")


def serving(engine: str, keys: str) -> AbstractAsyncContextManager[str]:
    """``mcpfast serve`` (the demo) on ``engine`` with ``MCPFAST_KEYS=keys``."""
    port = free_port()
    argv = mcpfast_command("serve", "--port", str(port), "--engine", engine)
    return server_process(argv, port, {"MCPFAST_KEYS": keys})


async def greet(wire: Wire, request_state: str | None = None) -> dict[str, Any]:
    """The demo's ``greet`` (it asks for a name): the first round, or the retry that answers
    it with ``request_state``."""
    params: dict[str, Any] = {"name": "greet", "arguments": {}}
    if request_state is not None:
        params["requestState"] = request_state
        params["inputResponses"] = {"name": {"action": "accept", "content": {"name": "Ada"}}}
    reply = await wire.modern("tools/call", params, capabilities={"elicitation": {}})
    assert reply.status == 200, reply.messages
    return reply.message


class Minted:
    """What a server signed with k1: a session id and a ``requestState``."""

    def __init__(self, session: str, state: str) -> None:
        self.session = session
        self.state = state


async def mint_with_k1(engine: str, http: httpx2.AsyncClient) -> Minted:
    async with serving(engine, K1) as url:
        wire = Wire(http, url)
        session, _ = await wire.initialize(LEGACY)
        first = await greet(wire)
    assert first["result"]["resultType"] == "input_required"
    assert session.split(".")[1] == "k1"
    return Minted(session, first["result"]["requestState"])


async def ping(wire: Wire, session: str) -> Any:
    return await wire.legacy("ping", session=session, version=LEGACY)


@ENGINES
async def test_rotation_keeps_old_tokens_until_their_key_is_retired(engine: str) -> None:
    async with httpx2.AsyncClient(timeout=10) as http:
        minted = await mint_with_k1(engine, http)
        # k2 signs now, k1 still verifies: the old session and state go on
        async with serving(engine, f"{K2},{K1}") as url:
            wire = Wire(http, url)
            assert (await ping(wire, minted.session)).status == 200
            answered = await greet(wire, minted.state)
            assert answered["result"]["content"][0]["text"] == "Hello, Ada!"
            fresh, _ = await wire.initialize(LEGACY)
            assert fresh.split(".")[1] == "k2"
            state_k2 = (await greet(wire))["result"]["requestState"]
            assert state_k2.split(".")[1] == "k2"
        # k1 retired: what it signed is refused, what k2 signed is not
        async with serving(engine, K2) as url:
            wire = Wire(http, url)
            gone = await ping(wire, minted.session)
            assert gone.status == 404
            assert gone.error["code"] == -32001
            assert gone.error["data"] == {"reason": "unknown_key"}
            refused = await greet(wire, minted.state)
            assert refused["error"]["code"] == -32602
            assert refused["error"]["data"] == {"reason": "unknown_key"}
            assert (await ping(wire, fresh)).status == 200
            assert (await greet(wire, state_k2))["result"]["content"][0]["text"] == "Hello, Ada!"


@ENGINES
@pytest.mark.parametrize(
    ("keys", "reason"),
    [(OTHER_K1, "bad_signature"), (OTHER, "unknown_key")],
    ids=["same-key-id", "other-key-id"],
)
async def test_another_deployment_refuses_what_this_one_signed(
    engine: str, keys: str, reason: str
) -> None:
    async with httpx2.AsyncClient(timeout=10) as http:
        minted = await mint_with_k1(engine, http)
        async with serving(engine, keys) as url:
            wire = Wire(http, url)
            gone = await ping(wire, minted.session)
            assert (gone.status, gone.error["code"]) == (404, -32001)
            assert gone.error["data"] == {"reason": reason}
            refused = await greet(wire, minted.state)
            assert refused["error"]["code"] == -32602
            assert refused["error"]["data"] == {"reason": reason}
            # its own tokens work
            own, _ = await wire.initialize(LEGACY)
            assert (await ping(wire, own)).status == 200


@ENGINES
async def test_a_task_id_is_refused_outside_the_deployment_that_started_it(engine: str) -> None:
    """A task id names a record of the deployment's bus: another deployment (or the same one
    restarted, with the in-process bus) knows no such task: -32602 with the id."""
    tasks: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    async with httpx2.AsyncClient(timeout=10) as http:
        async with serving(engine, K1) as url:
            wire = Wire(http, url)
            started = await wire.modern(
                "tools/call",
                {"name": "slow", "arguments": {"steps": 50}, "_meta": meta(tasks)},
            )
            task_id = started.result["taskId"]
            here = await wire.modern("tasks/get", {"taskId": task_id, "_meta": meta(tasks)})
            assert here.status == 200 and here.result["taskId"] == task_id
            for tampered in (task_id[:-1], task_id + "x", task_id.swapcase()):
                other = await wire.modern("tasks/get", {"taskId": tampered, "_meta": meta(tasks)})
                assert other.error["code"] == -32602, tampered
        async with serving(engine, OTHER) as url:
            wire = Wire(http, url)
            gone = await wire.modern("tasks/get", {"taskId": task_id, "_meta": meta(tasks)})
            assert gone.status == 200
            assert gone.error["code"] == -32602 and gone.error["data"] == {"taskId": task_id}
