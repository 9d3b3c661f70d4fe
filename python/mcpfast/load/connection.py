"""One load user's way of speaking MCP over a locust `FastHttpSession` (gevent, no Trio), or the
fast engine's plan's over a `mcpfast.load.blocking.BlockingSession` (no gevent: nothing here
imports it; a stream's `Events` only once read).

Modern era: stateless POSTs (`wire.modern_request`). Legacy era: a session whose rules are the
client's own (`protocol.session.ClientSession`: the handshake's headers, the session id adopted
and replaced when re-minted, a 404 to a request with the id means it expired: initialize again
and retry once). Every answer is judged (`wire.judge`) and recorded as locust's outcome of the
request; streams are read line by line (`Events`).

With `Credentials` every request carries their ``Authorization`` header (and, DPoP-bound, a
fresh proof for its method and the URL: `Credentials.sign`), and every answer is shown to them
(`Credentials.answered`: a ``DPoP-Nonce`` is adopted); a request answered 401 is sent once more
when the credentials have a newer token or the server's new DPoP nonce
(`Credentials.unauthorized`), the 401 then recorded as a success named ``... (401: token
renewed)`` or ``... (401: DPoP nonce)``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .. import jsonrpc
from ..protocol.backoff import retry_after
from ..protocol.correlation import Correlator
from ..protocol.session import SESSION_HEADER, ClientSession
from ..versions import LATEST_LEGACY, MODERN
from . import wire
from .auth import Credentials
from .blocking import BlockingSession
from .events import Events

if TYPE_CHECKING:
    from locust.contrib.fasthttp import FastHttpSession

Say = Callable[[str], None]
"""Say a line once per process (`locustfile.Shared.note`)."""
Hold = Callable[["Events", float], None]
"""What is done with an open stream for so many seconds (`Events.hold`: drop what comes)."""


_SAID: set[str] = set()
"""The kinds of failure (text and request name) this process said (`Connection.settle`)."""
_WORDS: dict[str, set[str]] = {}
"""The failure texts this process recorded, by kind (`wire.recorded`)."""


def payload(body: bytes) -> Any:
    """A request body as is (geventhttpclient sends bytes; locust's annotation says str)."""
    return body


def content_type(response: Any) -> str:
    headers = response.headers
    return str(headers.get("content-type", "")) if headers is not None else ""


def header(response: Any, name: str) -> str | None:
    headers = response.headers
    value = headers.get(name) if headers is not None else None
    return str(value) if value else None


def no_answer(response: Any) -> str:
    """The failure text of a request that got no HTTP answer."""
    error = getattr(response, "error", None)
    return f"no answer ({error!r})" if error is not None else "no answer"


def said(answer: wire.Answer) -> str:
    """The failure of ``answer`` with the server's words: ``HTTP 200 JSON-RPC -32601 (Method
    not found)``."""
    return f"{answer.failure} ({answer.detail})" if answer.detail else str(answer.failure)


def _asked_wait(response: Any) -> float:
    """The seconds a refusal's ``Retry-After`` asks for (0: none)."""
    return retry_after(header(response, "retry-after"), time.time()) or 0.0


def _judged(method: str, id_: Any, response: Any) -> wire.Answer:
    return wire.judge(
        method, id_, response.status_code, content_type(response), response.content or b""
    )


class Connection:
    """One user's requests through ``client``: stateless (modern) or in a session (legacy), in
    ``version`` (legacy: the revision its ``initialize`` offers, `ClientSession`'s rules for
    the rest). The first failure of each kind is said through ``say`` (None: say nothing, as
    the probe does: it reports what failures mean)."""

    def __init__(
        self,
        client: FastHttpSession | BlockingSession,
        era: str,
        version: str,
        *,
        say: Say | None = None,
        auth: Credentials | None = None,
    ) -> None:
        self.client = client
        self.say = say
        self.auth = auth
        self.era = era
        self.transport = wire.modern_transport(version if era == "modern" else MODERN)
        self.state = ClientSession(version if era == "legacy" else LATEST_LEGACY)
        self.initialized = False
        self.subscribed = False
        self.capabilities: dict[str, Any] = {}
        self.declared: dict[str, Any] = {}
        """The client capabilities this user declares (none unless set: `mcpfast.load.elicit`
        declares elicitation), in its modern requests' ``_meta`` and at ``initialize``."""
        self.problem: str | None = None
        self.ids: Correlator[None] = Correlator("" if era == "modern" else "c")
        self.prefix = "" if era == "modern" else "legacy "
        """What the names of its requests begin with (`label`)."""

    @property
    def version(self) -> str | None:
        """The negotiated legacy revision (None before ``initialize`` answered)."""
        initialized = self.state.initialized
        return initialized.version if initialized is not None else None

    def label(self, name: str) -> str:
        return self.prefix + name

    def settle(self, response: Any, answer: wire.Answer) -> None:
        """Record ``answer`` as locust's outcome of ``response``; the first failure of each kind
        is said once per process, with the server's words (which may vary: a refusal's wait),
        not one that says the server lacks the method (the user that stops or drops it says
        so)."""
        if answer.failure is None:
            response.success()
            return
        kind = f"{answer.failure} ({response.request_meta['name']})"
        if self.say is not None and not answer.not_offered and kind not in _SAID:
            _SAID.add(kind)
            self.say(f"first {kind}: {answer.detail or '-'}")
        response.failure(wire.recorded(answer, _WORDS))

    def authorize(self, headers: dict[str, str], method: str = "POST") -> str:
        """Add the credentials to ``headers`` (`Credentials.sign`: ``Authorization``, and a
        DPoP proof for ``method`` to the server's URL): the value sent ("" without
        credentials)."""
        if self.auth is None:
            return ""
        return self.auth.sign(headers, method, self.client.base_url or "")

    def renewed(self, response: Any, used: str) -> bool:
        """Whether ``response`` (shown to `answered` first) is a 401 to ``used`` that the
        credentials can answer (a newer token, the server's DPoP nonce): then it is recorded
        as a success under its own name, and the request should be sent again (once)."""
        if self.auth is None or response.status_code != 401 or not used:
            return False
        why = self.auth.unauthorized(used, response.headers)
        if why is None:
            return False
        response.request_meta["name"] = f"{response.request_meta['name']} (401: {why})"
        response.success()
        return True

    def answered(self, response: Any) -> None:
        """Show ``response`` to the credentials (what it hands out is adopted)."""
        if self.auth is not None:
            self.auth.answered(response.headers)

    @contextmanager
    def request(
        self,
        method: str,
        name: str,
        headers: dict[str, str],
        body: bytes | None = None,
        *,
        stream: bool = False,
        retry: bool = False,
    ) -> Iterator[tuple[Any, float]]:
        """One HTTP request recorded by locust under ``name``, for the caller to settle:
        authorized (`authorize`), its answer shown to the credentials (`answered`); with
        ``retry``, a 401 they can answer (`renewed`) is sent once more. Yields the response
        (``status_code`` 0: no HTTP answer) and when it was sent (`time.perf_counter`)."""
        for again in (retry, False):
            used = self.authorize(headers, method)
            sent = time.perf_counter()
            with self.client.request(
                method,
                "",
                name=name,
                data=payload(body) if body is not None else None,
                headers=headers,
                stream=stream,
                catch_response=True,
            ) as response:
                if response.status_code != 0:
                    self.answered(response)
                    if again and self.renewed(response, used):
                        continue
                yield response, sent
                return

    # ------------------------------------------------------------------------------ requests

    def call(
        self, method: str, params: dict[str, Any] | None = None, *, name: str | None = None
    ) -> wire.Answer | None:
        """Send one request and judge its answer (None: no HTTP answer at all, or the legacy
        handshake failed; both already recorded)."""
        if self.era == "modern":
            id_ = self.ids.next_id()
            body, headers = wire.modern_request(self.transport, id_, method, params, self.declared)
            return self._post(method, id_, body, headers, name or method)
        if not self.initialized and not self.initialize():
            return None
        answer, expired = self._legacy(method, params, name or method)
        if expired and self.initialize():
            answer, _ = self._legacy(method, params, name or method)
        return answer

    def _post(
        self, method: str, id_: int | str, body: bytes, headers: dict[str, str], name: str
    ) -> wire.Answer | None:
        with self.request("POST", name, headers, body, retry=True) as (response, _):
            if response.status_code == 0:
                return None  # no HTTP answer: locust records the connection error itself
            answer = _judged(method, id_, response)
            self.settle(response, answer)
            return answer

    def _legacy(
        self, method: str, params: dict[str, Any] | None, name: str
    ) -> tuple[wire.Answer | None, bool]:
        """A request in the session; ``True`` second when the session expired."""
        id_ = self.ids.next_id()
        body = jsonrpc.request(id_, method, params if params is not None else {})
        label = self.label(name)
        headers = self.state.headers()
        with self.request("POST", label, headers, body, retry=True) as (response, _):
            if response.status_code == 0:
                return None, False
            if self._expired(response, headers, label):
                return None, True
            self.state.adopt(header(response, SESSION_HEADER))
            answer = _judged(method, id_, response)
            self.settle(response, answer)
            return answer, False

    def _expired(self, response: Any, headers: dict[str, str], label: str) -> bool:
        """Whether the answer says the session expired: then it is a success under its own
        name, and the session must be opened again."""
        if not self.state.expired(response.status_code, headers.get(SESSION_HEADER)):
            return False
        response.request_meta["name"] = label + " (session expired: 404)"
        response.success()
        self.initialized = False
        return True

    def initialize(self) -> bool:
        """``initialize`` then ``notifications/initialized``: a new session (False: it failed,
        and ``problem`` says how)."""
        self.initialized = False
        self.subscribed = False
        self.problem = None
        id_ = self.ids.next_id()
        body = jsonrpc.request(id_, "initialize", self.state.begin(self.declared, wire.CLIENT_INFO))
        headers = self.state.initialize_headers()
        name = self.label("initialize")
        with self.request("POST", name, headers, body, retry=True) as (response, _):
            if response.status_code == 0:
                self.problem = no_answer(response)
                return False
            answer = _judged("initialize", id_, response)
            self.settle(response, answer)
            if answer.failure is not None:
                self.problem = answer.failure
                return False
            self.state.adopt(header(response, SESSION_HEADER))
        self.capabilities = dict(self.state.opened(answer.result).capabilities or {})
        return self._initialized()

    def _initialized(self) -> bool:
        """``notifications/initialized``: the session is open (False: ``problem`` says why)."""
        note = jsonrpc.notification("notifications/initialized")
        headers = self.state.headers()
        self.authorize(headers)
        with self.client.request(
            "POST",
            "",
            name=self.label("notifications/initialized"),
            data=payload(note),
            headers=headers,
            catch_response=True,
        ) as response:
            if response.status_code == 0:
                self.problem = no_answer(response)
                return False
            if response.status_code not in (200, 202):
                self.problem = f"HTTP {response.status_code}"
                response.failure(self.problem)
                return False
            response.success()
        self.initialized = True
        return True

    def close(self) -> int:
        """End the legacy session (DELETE; 404/405 are fine answers): the HTTP status (0: no
        session to end, or no answer)."""
        if self.era != "legacy" or self.state.id is None:
            return 0
        headers = self.state.headers()
        self.authorize(headers, "DELETE")
        with self.client.request(
            "DELETE", "", name=self.label("DELETE session"), headers=headers, catch_response=True
        ) as response:
            status = int(response.status_code)
            if status == 0:
                return 0
            if status in (200, 202, 204, 404, 405):
                response.success()
            else:
                response.failure(f"HTTP {status}")
        self.state.end()
        self.initialized = False
        return status

    # ------------------------------------------------------------------------------- streams

    def listen(
        self, seconds: float, notifications: dict[str, Any], hold: Hold | None = None
    ) -> wire.Answer | None:
        """``subscriptions/listen`` of ``notifications``: the acknowledgement timed, then the
        stream held open for ``seconds`` by ``hold`` (default `Events.hold`: what comes is
        dropped). The judged answer (None: no HTTP answer); one attempt (`lasting.held` makes
        as many as the seconds take)."""
        id_ = self.ids.next_id()
        body, headers = wire.modern_request(
            self.transport, id_, "subscriptions/listen", {"notifications": notifications}
        )
        headers["accept-encoding"] = "identity"
        self.authorize(headers)
        started = time.perf_counter()
        with self.client.request(
            "POST",
            "",
            name="subscriptions/listen",
            data=payload(body),
            headers=headers,
            stream=True,
            catch_response=True,
        ) as response:
            if response.status_code == 0:
                return None
            if response.status_code != 200 or not content_type(response).startswith(
                "text/event-stream"
            ):
                answer = _judged("subscriptions/listen", id_, response)
                if answer.failure is None:
                    answer.failure = f"HTTP {response.status_code} not an event stream"
                answer.wait = _asked_wait(response)
                self.settle(response, answer)
                return answer
            reader = Events(response)
            first = reader.next_message(max(seconds, 5.0))
            response.request_meta["response_time"] = (time.perf_counter() - started) * 1000
            problem = "no acknowledgement" if first is None else wire.check_ack(first)
            answer = wire.Answer(
                None if problem is None else f"HTTP 200 {problem}", first, status=200
            )
            self.settle(response, answer)
        if problem is None:
            (hold or Events.hold)(reader, seconds)
        reader.close()
        return answer

    def get_stream(
        self, seconds: float, *, name: str = "legacy GET stream", hold: Hold | None = None
    ) -> wire.Answer | None:
        """The legacy session's GET stream: its opening timed, then held open for ``seconds``
        by ``hold`` (as `listen`). The judged answer (None: no HTTP answer, or the session
        could not be opened); one attempt, as `listen`'s."""
        if not self.initialized and not self.initialize():
            return None
        headers = {**self.state.stream_headers(), "accept-encoding": "identity"}
        headers.pop("content-type", None)
        self.authorize(headers, "GET")
        with self.client.request(
            "GET", "", name=name, headers=headers, stream=True, catch_response=True
        ) as response:
            status = response.status_code
            if status == 0:
                return None
            if self._expired(response, headers, name):
                answer = wire.Answer(None, status=status)
            else:
                self.state.adopt(header(response, SESSION_HEADER))
                answer = self._stream_answer(response)
        reader = Events(response)
        if answer.failure is None and status == 200 and seconds > 0:
            (hold or Events.hold)(reader, seconds)
        reader.close()
        return answer

    def _stream_answer(self, response: Any) -> wire.Answer:
        """The judged opening of a GET stream (recorded)."""
        status = response.status_code
        if status == 200 and content_type(response).startswith("text/event-stream"):
            response.success()
            return wire.Answer(None, status=status)
        text = "HTTP 200 not an event stream" if status == 200 else f"HTTP {status}"
        answer = wire.Answer(text, status=status, wait=_asked_wait(response))
        self.settle(response, answer)
        return answer
