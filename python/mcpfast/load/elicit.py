"""Tools that ask the user (gevent, no Trio): `ElicitUser` (in the locustfile) calls
``--mcp-elicit-tool`` and answers every elicitation it asks, in either era, so that
multi-round-trip tools can be load-tested.

The user declares the elicitation capability (form mode: `client_capabilities`, in the terms of
the revision it speaks) and answers each ``elicitation/create`` with ``accept`` and content
built from its ``requestedSchema`` (`arguments.arguments_for`; URL mode: ``accept`` alone);
``roots/list`` is answered with no roots, ``ping`` with ``{}``; anything else it cannot answer.

* Modern (2026-07-28): the ``tools/call`` result is ``input_required``; the user retries with the
  answers and the exact ``requestState`` (`protocol.modern.retry_params`, the client's rule),
  at most `MAX_ROUNDS` times. Each POST is a request ``elicit tools/call NAME #N``.
* Legacy (a session): the ``tools/call`` POST answers with an event stream that carries the
  server's ``elicitation/create`` requests; each is answered by a POST of its response
  (``legacy elicit answer elicitation/create``), and the tool's result comes on the same stream.
  The POST is the request ``legacy elicit tools/call NAME`` (timed to the stream's headers).

Each call, all rounds included, is also recorded as ``elicit tools/call NAME (N rounds)``
(``legacy elicit ...``), timed from the first POST to the final result, N the number of times
the server asked. It is recorded as a failure only when no request of the flow recorded the
failure itself: too many rounds, a request the user cannot answer, a legacy stream that ends
(or stays silent `ROUND_TIMEOUT` seconds) without the result, or a final result that is an
error or not a tool result (legacy: the result comes on the stream, not as a request's answer).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from locust.env import Environment

from .. import jsonrpc
from ..protocol.capabilities import client_capabilities
from ..protocol.modern import retry_params
from ..protocol.session import SESSION_HEADER
from . import wire
from .arguments import arguments_for
from .connection import Connection, Say, content_type, header
from .events import Events
from .notify import json_object
from .offers import Offer
from .probe import Tool, pick_tool
from .shared import option

__all__ = [
    "MAX_ROUNDS",
    "PROCESS",
    "ElicitFailed",
    "call_tool",
    "declare",
    "input_answer",
    "prepare",
]

MAX_ROUNDS = 16
"""The most ``input_required`` rounds (or legacy server requests) one call may take (as the
client's)."""
ROUND_TIMEOUT = 30.0
REQUEST_TYPE = "MCP"


class ElicitFailed(Exception):
    """A call's flow failed where no single request recorded it (the failure locust records)."""


@dataclass
class Process:
    """This load process's elicit setup (`prepare`): the tool and its arguments (None: none)."""

    tool: Tool | None = None
    shown: bool = False
    """The first complete result was said (`show`)."""


PROCESS = Process()


def prepare(environment: Environment, offer: Offer, note: Say) -> None:
    """Read the elicit options into `PROCESS` (once per process, after the probe): the tool
    and its arguments (``--mcp-elicit-arguments``, else built from its input schema).

    Raises:
        ValueError: ``--mcp-elicit-arguments`` is not a JSON object.
    """
    name = str(option(environment, "mcp_elicit_tool", ""))
    if not name:
        return
    tool = pick_tool(name, "", offer.tools, note)
    assert tool is not None  # a tool named is always picked
    given = str(option(environment, "mcp_elicit_arguments", ""))
    if given:
        tool.arguments = json_object(given, "--mcp-elicit-arguments")
    PROCESS.tool = tool


def declare(connection: Connection) -> None:
    """Declare the elicitation capability (form mode) on ``connection``, in the terms of the
    revision it speaks (legacy: the one its ``initialize`` offers)."""
    modern = connection.era == "modern"
    version = connection.transport.version if modern else connection.state.requested
    connection.declared = client_capabilities(
        version, elicit=True, sample=False, sampling_tools=False, roots=False
    )


def input_answer(method: str, params: dict[str, Any]) -> Any:
    """The answer to a server's request (or ``inputRequests`` entry) of ``method``.

    Raises:
        ElicitFailed: the load user does not answer ``method``.
    """
    if method == "elicitation/create":
        if params.get("mode", "form") != "form":
            return {"action": "accept"}
        return {"action": "accept", "content": arguments_for(params.get("requestedSchema"))}
    if method == "roots/list":
        return {"roots": []}
    if method == "ping":
        return {}
    raise ElicitFailed(f"the server asked for {method}, which the load user does not answer")


def total(name: str, rounds: int) -> str:
    """The name of a whole call's record: ``elicit tools/call greet (1 round)``."""
    return f"{name} ({rounds} round{'' if rounds == 1 else 's'})"


def show(connection: Connection, name: str, rounds: int, answer: wire.Answer) -> None:
    """Say the first successful result's text, once per process (what the tool answered)."""
    if PROCESS.shown or connection.say is None or answer.failure is not None:
        return
    PROCESS.shown = True
    content = answer.result.get("content") or []
    text = " ".join(str(c.get("text", "")) for c in content if c.get("type") == "text")
    connection.say(f"{total(name, rounds)} answered {text[:200]!r}")


def record(
    environment: Environment, name: str, started: float, error: Exception | None = None
) -> None:
    environment.events.request.fire(  # type: ignore[no-untyped-call]
        request_type=REQUEST_TYPE,
        name=name,
        response_time=(time.perf_counter() - started) * 1000,
        response_length=0,
        exception=error,
        context={},
    )


def call_tool(
    connection: Connection, environment: Environment, tool: str, arguments: dict[str, Any]
) -> wire.Answer | None:
    """Call ``tool`` and answer what it asks until its result (see the module): the judged
    answer of the last request (None: no HTTP answer, or the legacy session did not open), for
    the caller to stop on an answer that says the server lacks it."""
    params = {"name": tool, "arguments": arguments}
    if connection.era == "modern":
        return _modern(connection, environment, params)
    return _legacy(connection, environment, params)


def _modern(
    connection: Connection, environment: Environment, params: dict[str, Any]
) -> wire.Answer | None:
    tool = params["name"]
    started = time.perf_counter()
    for rounds in range(MAX_ROUNDS + 1):
        answer = connection.call(
            "tools/call", params, name=f"elicit tools/call {tool} #{rounds + 1}"
        )
        if answer is None or answer.failure is not None:
            return answer  # recorded as the request's failure
        result = answer.result
        if result.get("resultType") != "input_required":
            record(environment, total(f"elicit tools/call {tool}", rounds), started)
            show(connection, f"elicit tools/call {tool}", rounds, answer)
            return answer
        try:
            responses = {
                key: input_answer(str(entry.get("method", "")), entry.get("params") or {})
                for key, entry in result["inputRequests"].items()
            }
        except ElicitFailed as exc:
            record(environment, total(f"elicit tools/call {tool}", rounds + 1), started, exc)
            return answer
        params = retry_params(params, result, responses)
    error = ElicitFailed(f"more than {MAX_ROUNDS} input_required rounds")
    record(environment, total(f"elicit tools/call {tool}", MAX_ROUNDS + 1), started, error)
    return answer


def _legacy(
    connection: Connection, environment: Environment, params: dict[str, Any]
) -> wire.Answer | None:
    if not connection.initialized and not connection.initialize():
        return None
    id_ = connection.ids.next_id()
    body = jsonrpc.request(id_, "tools/call", params)
    name = connection.label(f"elicit tools/call {params['name']}")
    headers = {**connection.state.headers(), "accept-encoding": "identity"}
    with connection.request("POST", name, headers, body, stream=True) as (response, started):
        if response.status_code == 0:
            return None
        if connection._expired(response, headers, name):
            return wire.Answer(None, status=404)  # a new session next time
        connection.state.adopt(header(response, SESSION_HEADER))
        if not content_type(response).startswith("text/event-stream"):
            answer = wire.judge(
                "tools/call", id_, response.status_code, content_type(response), response.content
            )
            connection.settle(response, answer)
            if answer.failure is None:
                record(environment, total(name, 0), started)
                show(connection, name, 0, answer)
            return answer
        response.success()
    reader = Events(response)
    try:
        return _stream(connection, environment, reader, id_, name, started)
    finally:
        reader.close()


def _stream(
    connection: Connection,
    environment: Environment,
    reader: Events,
    id_: int | str,
    name: str,
    started: float,
) -> wire.Answer:
    """Answer the server's requests on a ``tools/call`` stream until its result."""
    rounds = 0
    while rounds <= MAX_ROUNDS:
        message = reader.next_message(ROUND_TIMEOUT)
        if message is None:
            error = ElicitFailed("the stream ended without the tools/call result")
            record(environment, total(name, rounds), started, error)
            return wire.Answer(str(error), status=200)
        if message.get("id") == id_ and "method" not in message:
            answer = wire.judge(
                "tools/call", id_, 200, "application/json", json.dumps(message).encode()
            )
            failure = None if answer.failure is None else ElicitFailed(answer.failure)
            record(environment, total(name, rounds), started, failure)
            show(connection, name, rounds, answer)
            return answer
        if "method" in message and "id" in message:
            rounds += 1
            _reply(connection, message)
    error = ElicitFailed(f"more than {MAX_ROUNDS} server requests")
    record(environment, total(name, rounds), started, error)
    return wire.Answer(str(error), status=200)


def _reply(connection: Connection, request: dict[str, Any]) -> None:
    """POST the answer to a server's request in the session (recorded)."""
    method = str(request.get("method"))
    try:
        body = jsonrpc.result(request["id"], input_answer(method, request.get("params") or {}))
    except ElicitFailed as exc:
        body = jsonrpc.error(request["id"], jsonrpc.METHOD_NOT_FOUND, str(exc))
    name = connection.label(f"elicit answer {method}")
    with connection.request("POST", name, connection.state.headers(), body) as (response, _):
        if response.status_code == 0:
            return
        if response.status_code in (200, 202):
            response.success()
        else:
            response.failure(f"HTTP {response.status_code}")
