"""The sans-IO HTTP/1.1 request parser and response writer (mcpfast.protocol.http11)."""

from __future__ import annotations

import re
import time
from email.utils import parsedate_to_datetime
from types import SimpleNamespace

import h11
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpfast.protocol import http11
from mcpfast.protocol.http11 import (
    CONTINUE,
    LAST_CHUNK,
    Headers,
    HttpError,
    Request,
    chunk,
    chunk_size,
    parse_head,
    response,
    response_head,
    target_path,
)


def head(request_line: bytes, *headers: bytes) -> bytes:
    """A request head (without the blank line ending it) from its lines."""
    return b"\r\n".join((request_line, *headers))


def refused(data: bytes) -> HttpError:
    """The refusal of the head ``data``, as the native engine reads it (its target too)."""
    with pytest.raises(HttpError) as info:
        target_path(parse_head(data).target)
    return info.value


def client_reading(data: bytes, method: bytes = b"GET") -> list[object]:
    """The events an h11 client gets from ``data``, the answer to one request it sent, up to
    the end of that answer (the server closes the connection after ``data``)."""
    client = h11.Connection(h11.CLIENT)
    client.send(h11.Request(method=method, target="/mcp", headers=[("Host", "x")]))
    client.send(h11.EndOfMessage())
    client.receive_data(data)
    client.receive_data(b"")  # then the server closes: ends a body delimited by the close
    events: list[object] = []
    while True:
        event = client.next_event()
        if event is h11.NEED_DATA or event is h11.PAUSED:
            break
        events.append(event)
        if isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
            break
    return events


def dechunk(data: bytes) -> bytes:
    """The body of a chunked stream that ``data`` holds entirely, read by hand."""
    out = b""
    while True:
        end = data.index(b"\r\n")
        size = chunk_size(data[:end])
        data = data[end + 2 :]
        if size == 0:
            assert data == b"\r\n"
            return out
        out += data[:size]
        assert data[size : size + 2] == b"\r\n"
        data = data[size + 2 :]


# --- constants ---


def test_constants() -> None:
    assert LAST_CHUNK == b"0\r\n\r\n"
    assert CONTINUE == b"HTTP/1.1 100 Continue\r\n\r\n"


def test_continue_is_an_interim_response_for_h11() -> None:
    client = h11.Connection(h11.CLIENT)
    client.send(
        h11.Request(
            method="POST",
            target="/mcp",
            headers=[("Host", "x"), ("Content-Length", "2"), ("Expect", "100-continue")],
        )
    )
    client.receive_data(CONTINUE)
    event = client.next_event()
    assert isinstance(event, h11.InformationalResponse)
    assert event.status_code == 100


# --- parse_head: what a request says ---


def test_request_line_and_headers() -> None:
    request = parse_head(
        head(
            b"POST /mcp HTTP/1.1",
            b"Host: example.com:8000",
            b"Content-Type:application/json",
            b"MCP-Session-Id: \t abc \t",
            b"Content-Length: 12",
        )
    )
    assert isinstance(request, Request)
    assert request.method == "POST"
    assert request.target == "/mcp"
    assert request.minor == 1
    assert request.headers == {
        "host": "example.com:8000",
        "content-type": "application/json",
        "mcp-session-id": "abc",
        "content-length": "12",
    }
    assert request.content_length == 12
    assert request.chunked is False
    assert request.keep_alive is True
    assert request.expect_continue is False


def test_method_is_kept_as_sent() -> None:
    assert parse_head(head(b"delete /mcp HTTP/1.1", b"Host: x")).method == "delete"
    assert parse_head(head(b"M-SEARCH /mcp HTTP/1.1", b"Host: x")).method == "M-SEARCH"


def test_repeated_header_keeps_last_value() -> None:
    request = parse_head(
        head(b"GET / HTTP/1.1", b"Host: x", b"Accept: text/html", b"ACCEPT: text/event-stream")
    )
    assert request.headers["accept"] == "text/event-stream"
    assert list(request.headers) == ["host", "accept"]


def test_header_value_may_be_empty_and_keeps_inner_spaces() -> None:
    request = parse_head(head(b"GET / HTTP/1.1", b"Host: x", b"X-Empty:", b"X-Inner:  a  b\t"))
    assert request.headers["x-empty"] == ""
    assert request.headers["x-inner"] == "a  b"


def test_header_values_are_latin1() -> None:
    request = parse_head(head(b"GET / HTTP/1.1", b"Host: x", b"X-Name: caf\xe9"))
    assert request.headers["x-name"] == "café"


def test_no_body_without_framing() -> None:
    request = parse_head(head(b"GET / HTTP/1.1", b"Host: x"))
    assert request.content_length is None
    assert request.chunked is False


@pytest.mark.parametrize(
    ("target", "path"),
    [
        (b"/", "/"),
        (b"/mcp", "/mcp"),
        (b"/mcp?session=1&x=%20", "/mcp"),
        (b"/mcp?", "/mcp"),
        (b"/a%20b/c", "/a b/c"),
        (b"/caf%C3%A9", "/café"),
        (b"/a%3Fb?c", "/a?b"),  # an encoded '?' is part of the path, not a query
        (b"/a%2Fb", "/a/b"),
        (b"/%zz", "/%zz"),  # an invalid escape stays as it is
        (b"//double", "//double"),
        (b"http://host:1/mcp?x", "/mcp"),
        (b"http://host/mcp", "/mcp"),
        (b"https://host/a%20b?q", "/a b"),
        (b"HTTP://host/mcp", "/mcp"),
        (b"http://host", "/"),
        (b"http://host?x", "/"),
    ],
)
def test_path(target: bytes, path: str) -> None:
    request = parse_head(head(b"GET " + target + b" HTTP/1.1", b"Host: x"))
    assert target_path(request.target) == path


@pytest.mark.parametrize(
    ("version_text", "connection", "keep_alive"),
    [
        (b"HTTP/1.1", None, True),
        (b"HTTP/1.1", b"close", False),
        (b"HTTP/1.1", b"Close", False),
        (b"HTTP/1.1", b"keep-alive", True),
        (b"HTTP/1.1", b"Upgrade, close", False),
        (b"HTTP/1.1", b"upgrade", True),
        (b"HTTP/1.1", b" \tclose\t , upgrade", False),
        (b"HTTP/1.0", None, False),
        (b"HTTP/1.0", b"keep-alive", True),
        (b"HTTP/1.0", b"Keep-Alive", True),
        (b"HTTP/1.0", b"close", False),
    ],
)
def test_keep_alive(version_text: bytes, connection: bytes | None, keep_alive: bool) -> None:
    lines = [b"Host: x"]
    if connection is not None:
        lines.append(b"Connection: " + connection)
    request = parse_head(head(b"GET /mcp " + version_text, *lines))
    assert request.minor == (1 if version_text == b"HTTP/1.1" else 0)
    assert request.keep_alive is keep_alive


@pytest.mark.parametrize(
    ("expect", "expect_continue"),
    [(None, False), (b"100-continue", True), (b"100-Continue", True), (b"200-ok", False)],
)
def test_expect_continue(expect: bytes | None, expect_continue: bool) -> None:
    lines = [b"Host: x", b"Content-Length: 3"]
    if expect is not None:
        lines.append(b"Expect: " + expect)
    assert parse_head(head(b"POST /mcp HTTP/1.1", *lines)).expect_continue is expect_continue


def test_http10_needs_no_host() -> None:
    request = parse_head(b"GET /mcp HTTP/1.0")
    assert request.minor == 0
    assert request.headers == {}
    assert request.target == "/mcp"


def test_http11_host_may_be_empty() -> None:
    assert parse_head(head(b"GET / HTTP/1.1", b"Host:")).headers["host"] == ""


# --- parse_head: framing ---


@pytest.mark.parametrize(
    ("lines", "length"),
    [
        ([b"Content-Length: 0"], 0),
        ([b"Content-Length: 5"], 5),
        ([b"Content-Length:5"], 5),
        ([b"content-length: \t42\t "], 42),
        ([b"Content-Length: 007"], 7),
        ([b"Content-Length: 5, 5"], 5),
        ([b"Content-Length: 5,5,5"], 5),
        ([b"Content-Length: 5", b"Content-Length: 5"], 5),
        ([b"Content-Length: 999999999999999999"], 999_999_999_999_999_999),
    ],
)
def test_content_length(lines: list[bytes], length: int) -> None:
    request = parse_head(head(b"POST /mcp HTTP/1.1", b"Host: x", *lines))
    assert request.content_length == length
    assert request.chunked is False


@pytest.mark.parametrize("coding", [b"chunked", b"Chunked", b"CHUNKED", b" chunked ", b"chunked\t"])
def test_chunked(coding: bytes) -> None:
    request = parse_head(head(b"POST /mcp HTTP/1.1", b"Host: x", b"Transfer-Encoding: " + coding))
    assert request.chunked is True
    assert request.content_length is None


# --- parse_head: refusals ---


@pytest.mark.parametrize(
    ("data", "status"),
    [
        # malformed request line
        (b"", 400),
        (b"GET", 400),
        (b"GET /mcp", 400),
        (head(b"GET /mcp", b"Host: x"), 400),
        (head(b"GET /mcp HTTP/1.1 extra", b"Host: x"), 400),
        (head(b"GET /a b HTTP/1.1", b"Host: x"), 400),
        (head(b"GET  HTTP/1.1", b"Host: x"), 400),  # empty target
        (head(b"GET  /mcp HTTP/1.1", b"Host: x"), 400),  # two spaces
        (head(b"GET /mcp  HTTP/1.1", b"Host: x"), 400),
        (head(b" GET /mcp HTTP/1.1", b"Host: x"), 400),
        (head(b"GET /mcp HTTP/1.1 ", b"Host: x"), 400),
        (head(b"GET\t/mcp\tHTTP/1.1", b"Host: x"), 400),
        (head(b"G(T /mcp HTTP/1.1", b"Host: x"), 400),
        (head(b"GE:T /mcp HTTP/1.1", b"Host: x"), 400),
        (head(b"G\xc3\x89T /mcp HTTP/1.1", b"Host: x"), 400),
        (head(b" /mcp HTTP/1.1", b"Host: x"), 400),  # empty method
        (b"GET /mcp HTTP/1.1\nHost: x", 400),  # bare LF is no line end
        # HTTP versions
        (head(b"GET /mcp HTTP/2.0", b"Host: x"), 505),
        (head(b"GET /mcp HTTP/2.0", b"Host: x"), 505),
        (head(b"GET /mcp http/1.1", b"Host: x"), 400),
        (head(b"GET /mcp HTTP/0.9", b"Host: x"), 505),
        (head(b"GET /mcp HTTP/3", b"Host: x"), 400),  # not HTTP/DIGIT.DIGIT: no version
        # header lines
        (head(b"GET /mcp HTTP/1.1", b"Host: x", b"NoColon"), 400),
        (head(b"GET /mcp HTTP/1.1", b"Host : x"), 400),
        (head(b"GET /mcp HTTP/1.1", b"Host\t: x"), 400),
        (head(b"GET /mcp HTTP/1.1", b"Host: x", b": value"), 400),
        (head(b"GET /mcp HTTP/1.1", b"Host: x", b" folded: value"), 400),
        (head(b"GET /mcp HTTP/1.1", b"Host: x", b"X-A: a", b" continued"), 400),
        (head(b"GET /mcp HTTP/1.1", b"Host: x", b"X-A: a", b"\tcontinued"), 400),
        (head(b"GET /mcp HTTP/1.1", b"Host: x", b"X(A): a"), 400),
        (head(b"GET /mcp HTTP/1.1", b"Host: x", b"X\xe9: a"), 400),
        (head(b"GET /mcp HTTP/1.1", b"Host: x", b""), 400),  # an empty line inside the head
        (head(b"GET /mcp HTTP/1.1", b"Host: x") + b"\r\n", 400),
        # Host
        (b"GET /mcp HTTP/1.1", 400),
        (head(b"GET /mcp HTTP/1.1", b"X-Host: x"), 400),
        # Content-Length
        (head(b"POST /mcp HTTP/1.1", b"Host: x", b"Content-Length: abc"), 400),
        (head(b"POST /mcp HTTP/1.1", b"Host: x", b"Content-Length: -1"), 400),
        (head(b"POST /mcp HTTP/1.1", b"Host: x", b"Content-Length: +1"), 400),
        (head(b"POST /mcp HTTP/1.1", b"Host: x", b"Content-Length: 0x10"), 400),
        (head(b"POST /mcp HTTP/1.1", b"Host: x", b"Content-Length: 1.5"), 400),
        (head(b"POST /mcp HTTP/1.1", b"Host: x", b"Content-Length: 1 2"), 400),
        (head(b"POST /mcp HTTP/1.1", b"Host: x", b"Content-Length: \xd9\xa3"), 400),
        (head(b"POST /mcp HTTP/1.1", b"Host: x", b"Content-Length: "), 400),
        (head(b"POST /mcp HTTP/1.1", b"Host: x", b"Content-Length: 5,"), 400),
        (head(b"POST /mcp HTTP/1.1", b"Host: x", b"Content-Length: 1000000000000000000"), 400),
        (head(b"POST /mcp HTTP/1.1", b"Host: x", b"Content-Length: 5, 6"), 400),
        (head(b"POST /mcp HTTP/1.1", b"Host: x", b"Content-Length: 5", b"Content-Length: 6"), 400),
        (
            head(b"POST /mcp HTTP/1.1", b"Host: x", b"Content-Length: 5", b"Content-Length: 5, 6"),
            400,
        ),
        # Transfer-Encoding
        (
            head(
                b"POST /mcp HTTP/1.1",
                b"Host: x",
                b"Transfer-Encoding: chunked",
                b"Content-Length: 5",
            ),
            400,
        ),
        (
            head(
                b"POST /mcp HTTP/1.1",
                b"Host: x",
                b"Content-Length: 5",
                b"Transfer-Encoding: chunked",
            ),
            400,
        ),
        (
            head(
                b"POST /mcp HTTP/1.1", b"Host: x", b"Content-Length: 0", b"Transfer-Encoding: gzip"
            ),
            400,
        ),
        (head(b"POST /mcp HTTP/1.1", b"Host: x", b"Transfer-Encoding: gzip"), 501),
        (head(b"POST /mcp HTTP/1.1", b"Host: x", b"Transfer-Encoding: gzip, chunked"), 501),
        (head(b"POST /mcp HTTP/1.1", b"Host: x", b"Transfer-Encoding: chunked, chunked"), 501),
        (head(b"POST /mcp HTTP/1.1", b"Host: x", b"Transfer-Encoding: identity"), 501),
        (head(b"POST /mcp HTTP/1.1", b"Host: x", b"Transfer-Encoding:"), 501),
        # request targets
        (head(b"OPTIONS * HTTP/1.1", b"Host: x"), 400),
        (head(b"GET ftp://x/y HTTP/1.1", b"Host: x"), 400),
        (head(b"GET mcp HTTP/1.1", b"Host: x"), 400),
        (head(b"CONNECT host:443 HTTP/1.1", b"Host: host:443"), 400),
        (head(b"GET http:/x/y HTTP/1.1", b"Host: x"), 400),
        (head(b"GET ?x HTTP/1.1", b"Host: x"), 400),
    ],
)
def test_refused(data: bytes, status: int) -> None:
    error = refused(data)
    assert error.status == status
    assert error.reason
    assert str(error) == error.reason


def test_refusal_reasons() -> None:
    assert "Host" in refused(b"GET / HTTP/1.1").reason
    assert "version" in refused(b"GET / HTTP/2.0").reason
    gzip = refused(head(b"POST / HTTP/1.1", b"Host: x", b"Transfer-Encoding: gzip"))
    assert "gzip" in gzip.reason


def test_version_checked_before_headers() -> None:
    # An HTTP/2 preface-like request gets 505, even though its (absent) Host would be a 400.
    assert refused(b"PRI * HTTP/2.0").status == 505


def test_http_error() -> None:
    error = HttpError(431, "too large")
    assert isinstance(error, Exception)
    assert (error.status, error.reason, error.args) == (431, "too large", ("too large",))


# --- chunk_size ---


@pytest.mark.parametrize(
    ("line", "size"),
    [
        (b"0", 0),
        (b"1", 1),
        (b"a", 10),
        (b"A", 10),
        (b"ff", 255),
        (b"FF", 255),
        (b"fF", 255),
        (b"10", 16),
        (b"000", 0),
        (b"7fffffffffffffff"[1:], 0xFFFFFFFFFFFFFFF),  # 15 digits
        (b"1;name=value", 1),
        (b'1a;name="quoted;value"', 26),
        (b"2;a;b;c", 2),
        (b"3;", 3),
        (b"4 ;ext", 4),
        (b"4\t;ext", 4),
        (b"5 ", 5),
    ],
)
def test_chunk_size(line: bytes, size: int) -> None:
    assert chunk_size(line) == size


@pytest.mark.parametrize(
    "line",
    [
        b"",
        b"zz",
        b"g",
        b"5x",
        b"-1",
        b"+1",
        b" 1",
        b"0x10",
        b"1 2",
        b"1\r",
        b"1\n",
        b"1;ext\nx",
        b";ext",
        b"1111111111111111",  # 16 digits
        b"0000000000000001",  # 16 digits even if the value is small
        b"ffffffffffffffffffff",
        b"\xd9\xa3",
    ],
)
def test_chunk_size_refused(line: bytes) -> None:
    with pytest.raises(HttpError) as info:
        chunk_size(line)
    assert info.value.status == 400


# --- response_head ---

DATE = re.compile(rb"date: ([A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT)\r\n")


def lines_of(response: bytes) -> list[bytes]:
    assert response.endswith(b"\r\n\r\n")
    assert response.count(b"\r\n\r\n") == 1
    return response[: -len(b"\r\n\r\n")].split(b"\r\n")


def names_of(response: bytes) -> list[bytes]:
    return [line.partition(b":")[0] for line in lines_of(response)[1:]]


@pytest.mark.parametrize(
    ("status", "status_line"),
    [
        (200, b"HTTP/1.1 200 OK"),
        (202, b"HTTP/1.1 202 Accepted"),
        (400, b"HTTP/1.1 400 Bad Request"),
        (404, b"HTTP/1.1 404 Not Found"),
        (413, b"HTTP/1.1 413 Request Entity Too Large"),
        (431, b"HTTP/1.1 431 Request Header Fields Too Large"),
        (500, b"HTTP/1.1 500 Internal Server Error"),
        (505, b"HTTP/1.1 505 HTTP Version Not Supported"),
        (599, b"HTTP/1.1 599 "),  # no known reason: empty, the space stays
    ],
)
def test_status_line(status: int, status_line: bytes) -> None:
    response = response_head(status, [], length=0, keep_alive=True, version=(1, 1))
    assert lines_of(response)[0] == status_line


def test_date_header() -> None:
    response = response_head(200, [], length=0, keep_alive=True, version=(1, 1))
    match = DATE.search(response)
    assert match is not None
    assert lines_of(response)[1] == match.group(0)[:-2]
    when = parsedate_to_datetime(match.group(1).decode())
    assert when.tzinfo is not None
    assert abs(when.timestamp() - time.time()) < 5


def test_headers_are_written_as_given_in_order() -> None:
    headers: Headers = [
        (b"content-type", b"application/json"),
        (b"mcp-session-id", b"abc"),
        (b"X-Mixed", b"Value With Spaces"),
    ]
    response = response_head(200, headers, length=7, keep_alive=True, version=(1, 1))
    assert lines_of(response)[2:] == [
        b"content-type: application/json",
        b"mcp-session-id: abc",
        b"X-Mixed: Value With Spaces",
        b"content-length: 7",
    ]


@pytest.mark.parametrize("version", [(1, 1), (1, 0)])
def test_content_length_when_given(version: tuple[int, int]) -> None:
    response = response_head(200, [], length=123, keep_alive=True, version=version)
    assert b"\r\ncontent-length: 123\r\n" in response
    assert b"transfer-encoding" not in response
    assert b"connection" not in response


@pytest.mark.parametrize("status", [200, 202, 204, 304, 404, 429, 500])
@pytest.mark.parametrize("keep_alive", [True, False])
def test_a_whole_response_is_its_head_and_body(status: int, keep_alive: bool) -> None:
    headers = [(b"content-type", b"application/json"), (b"mcp-session-id", b"abc")]
    body = b"" if status in (204, 304) else b'{"jsonrpc":"2.0"}'
    whole = response(status, headers, body, keep_alive=keep_alive, limit=100)
    head = response_head(status, headers, length=len(body), keep_alive=keep_alive, version=(1, 1))
    assert whole == head + body
    events = client_reading(whole)
    assert events[0].status_code == status  # type: ignore[attr-defined]
    assert b"".join(e.data for e in events if isinstance(e, h11.Data)) == body


def test_a_whole_response_keeps_the_head_size_limit() -> None:
    headers = [(b"x-big", b"v" * 100)]
    assert response(200, headers, b"", keep_alive=True, limit=109).endswith(b"\r\n\r\n")
    with pytest.raises(ValueError, match="max_header_bytes"):
        response(200, headers, b"", keep_alive=True, limit=108)


def test_zero_length() -> None:
    response = response_head(202, [], length=0, keep_alive=True, version=(1, 1))
    assert b"\r\ncontent-length: 0\r\n" in response


def test_streaming_on_http11_is_chunked() -> None:
    response = response_head(200, [], length=None, keep_alive=True, version=(1, 1))
    assert names_of(response) == [b"date", b"transfer-encoding"]
    assert b"\r\ntransfer-encoding: chunked\r\n" in response


def test_streaming_on_http10_has_no_framing() -> None:
    response = response_head(200, [], length=None, keep_alive=False, version=(1, 0))
    assert names_of(response) == [b"date", b"connection"]
    assert b"\r\nconnection: close\r\n" in response


@pytest.mark.parametrize("length", [None, 0, 5])
@pytest.mark.parametrize("status", [204, 100, 101, 103])
def test_no_framing_for_204_and_1xx(status: int, length: int | None) -> None:
    response = response_head(status, [], length=length, keep_alive=True, version=(1, 1))
    assert b"content-length" not in response
    assert b"transfer-encoding" not in response
    assert names_of(response) == [b"date"]


@pytest.mark.parametrize("version", [(1, 1), (1, 0)])
@pytest.mark.parametrize("length", [None, 0, 10])
def test_connection_close(version: tuple[int, int], length: int | None) -> None:
    closing = response_head(200, [], length=length, keep_alive=False, version=version)
    staying = response_head(200, [], length=length, keep_alive=True, version=version)
    assert b"\r\nconnection: close\r\n" in closing
    assert b"connection" not in staying
    assert closing.replace(b"connection: close\r\n", b"") == staying


def test_h11_reads_a_response_with_length() -> None:
    body = b'{"jsonrpc":"2.0"}'
    response = response_head(
        200,
        [(b"content-type", b"application/json")],
        length=len(body),
        keep_alive=True,
        version=(1, 1),
    )
    events = client_reading(response + body)
    assert isinstance(events[0], h11.Response)
    assert events[0].status_code == 200
    assert events[0].http_version == b"1.1"
    assert events[0].reason == b"OK"
    headers = dict(events[0].headers)
    assert headers[b"content-type"] == b"application/json"
    assert headers[b"content-length"] == str(len(body)).encode()
    assert b"date" in headers
    assert isinstance(events[1], h11.Data)
    assert events[1].data == body
    assert isinstance(events[2], h11.EndOfMessage)


def test_h11_reads_a_closing_response() -> None:
    response = response_head(400, [], length=3, keep_alive=False, version=(1, 1))
    client = h11.Connection(h11.CLIENT)
    client.send(h11.Request(method="GET", target="/", headers=[("Host", "x")]))
    client.send(h11.EndOfMessage())
    client.receive_data(response + b"bad")
    event = client.next_event()
    assert isinstance(event, h11.Response)
    assert event.status_code == 400
    assert (b"connection", b"close") in list(event.headers)
    data = client.next_event()
    assert isinstance(data, h11.Data) and data.data == b"bad"
    assert isinstance(client.next_event(), h11.EndOfMessage)
    assert client.their_state is h11.MUST_CLOSE


def test_h11_reads_a_204() -> None:
    response = response_head(204, [], length=None, keep_alive=True, version=(1, 1))
    events = client_reading(response)
    assert isinstance(events[0], h11.Response)
    assert events[0].status_code == 204
    assert isinstance(events[1], h11.EndOfMessage)


def test_h11_reads_a_stream_until_close_on_http10() -> None:
    response = response_head(200, [], length=None, keep_alive=False, version=(1, 0))
    events = client_reading(response + b"data: 1\n\n")
    assert isinstance(events[0], h11.Response)
    assert b"".join(e.data for e in events if isinstance(e, h11.Data)) == b"data: 1\n\n"
    assert isinstance(events[-1], h11.EndOfMessage)


# --- response and response_head, byte for byte ---

_FIXED_DATE = b"date: Thu, 01 Jan 2026 00:00:00 GMT\r\n"
_PIN_HEADERS: Headers = [(b"content-type", b"application/json"), (b"mcp-session-id", b"abc")]


def pinned_head(
    status: int, headers: Headers, length: int | None, keep_alive: bool, version: tuple[int, int]
) -> bytes:
    """The head both writers must produce, spelled out rule by rule."""
    reasons = {100: b"Continue", 101: b"Switching Protocols", 200: b"OK", 204: b"No Content"}
    reasons |= {304: b"Not Modified", 404: b"Not Found", 599: b""}
    out = b"HTTP/1.1 %d %s\r\n" % (status, reasons[status]) + _FIXED_DATE
    out += b"".join(name + b": " + value + b"\r\n" for name, value in headers)
    if status in (204, 304) or status < 200:
        pass  # no body, no framing
    elif length is not None:
        out += b"content-length: %d\r\n" % length
    elif version >= (1, 1):
        out += b"transfer-encoding: chunked\r\n"
    if not keep_alive:
        out += b"connection: close\r\n"
    return out + b"\r\n"


@pytest.mark.parametrize("status", [100, 101, 200, 204, 304, 404, 599])
@pytest.mark.parametrize("keep_alive", [True, False])
@pytest.mark.parametrize("version", [(1, 0), (1, 1)])
@pytest.mark.parametrize("length", [None, 0, 17])
@pytest.mark.parametrize("headers", [[], _PIN_HEADERS])
def test_response_and_response_head_byte_for_byte(
    monkeypatch: pytest.MonkeyPatch,
    status: int,
    keep_alive: bool,
    version: tuple[int, int],
    length: int | None,
    headers: Headers,
) -> None:
    monkeypatch.setattr(http11, "time", SimpleNamespace(time=lambda: 1_767_225_600.5))
    expected = pinned_head(status, headers, length, keep_alive, version)
    assert (
        response_head(status, headers, length=length, keep_alive=keep_alive, version=version)
        == expected
    )
    body = b"x" * (length or 0)
    whole = response(status, headers, body, keep_alive=keep_alive, limit=1000)
    assert whole == pinned_head(status, headers, len(body), keep_alive, version) + body
    tight = sum(len(name) + len(value) + 4 for name, value in headers)
    assert response(status, headers, body, keep_alive=keep_alive, limit=tight) == whole
    if headers:
        with pytest.raises(ValueError, match="max_header_bytes"):
            response(status, headers, body, keep_alive=keep_alive, limit=tight - 1)


# --- chunk ---


@pytest.mark.parametrize(
    ("data", "encoded"),
    [
        (b"a", b"1\r\na\r\n"),
        (b"0123456789", b"a\r\n0123456789\r\n"),
        (b"x" * 255, b"ff\r\n" + b"x" * 255 + b"\r\n"),
        (b"\r\n", b"2\r\n\r\n\r\n"),
        (b"0\r\n\r\n", b"5\r\n0\r\n\r\n\r\n"),
    ],
)
def test_chunk(data: bytes, encoded: bytes) -> None:
    assert chunk(data) == encoded


def test_chunk_size_reads_what_chunk_writes() -> None:
    for size in (1, 15, 16, 4095, 65536, 1_000_003):
        encoded = chunk(b"\0" * size)
        assert chunk_size(encoded[: encoded.index(b"\r\n")]) == size


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=300), max_size=12))
def test_chunks_round_trip(parts: list[bytes]) -> None:
    stream = b"".join(chunk(part) for part in parts) + LAST_CHUNK
    assert dechunk(stream) == b"".join(parts)
    response = response_head(200, [], length=None, keep_alive=True, version=(1, 1))
    events = client_reading(response + stream)
    assert isinstance(events[0], h11.Response)
    assert b"".join(e.data for e in events if isinstance(e, h11.Data)) == b"".join(parts)
    assert isinstance(events[-1], h11.EndOfMessage)


# --- properties of parse_head ---


def parsed_or_refused(data: bytes) -> Request | None:
    """parse_head's request, or None for an HttpError (any other exception is a bug)."""
    try:
        request = parse_head(data)
        path = target_path(request.target)
    except HttpError as error:
        assert error.status in (400, 501, 505)
        return None
    assert request.minor in (0, 1)
    assert not (request.chunked and request.content_length is not None)
    assert request.content_length is None or request.content_length >= 0
    assert path.startswith("/")
    assert all(name == name.lower() for name in request.headers)
    return request


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_parse_head_on_any_bytes(data: bytes) -> None:
    parsed_or_refused(data)


_pieces = st.sampled_from(
    [
        b"GET",
        b"POST",
        b" ",
        b"\t",
        b"/",
        b"/mcp",
        b"?",
        b"%",
        b"%2",
        b"%C3%A9",
        b"%ff",
        b"*",
        b"http://",
        b"https://h:1",
        b"HTTP/1.1",
        b"HTTP/1.0",
        b"HTTP/2",
        b"\r\n",
        b"\n",
        b"\r",
        b":",
        b",",
        b";",
        b"Host",
        b"Content-Length",
        b"Transfer-Encoding",
        b"Connection",
        b"Expect",
        b"chunked",
        b"close",
        b"keep-alive",
        b"100-continue",
        b"0",
        b"5",
        b"-",
        b"99999999999999999999",
        b"\x00",
        b"\xff",
        b"\xc3\xa9",
    ]
)


@settings(max_examples=500, deadline=None)
@given(st.lists(_pieces, max_size=40))
def test_parse_head_on_http_like_bytes(pieces: list[bytes]) -> None:
    parsed_or_refused(b"".join(pieces))


_name = st.from_regex(rb"\A[A-Za-z][A-Za-z0-9-]{0,15}\Z")
_value = st.from_regex(rb"\A[!-~]([ -~]{0,20}[!-~])?\Z")


@settings(max_examples=200, deadline=None)
@given(
    method=st.from_regex(rb"\A[A-Z]{1,8}\Z"),
    segments=st.lists(st.from_regex(rb"\A[a-z0-9._~-]{0,8}\Z"), max_size=4),
    query=st.none() | st.from_regex(rb"\A[a-z0-9=&/%?]{0,12}\Z"),
    fields=st.lists(st.tuples(_name, _value), max_size=6),
    spaces=st.sampled_from([b"", b" ", b"\t", b" \t "]),
    version_text=st.sampled_from([b"HTTP/1.0", b"HTTP/1.1"]),
)
def test_parse_head_reads_well_formed_heads(
    method: bytes,
    segments: list[bytes],
    query: bytes | None,
    fields: list[tuple[bytes, bytes]],
    spaces: bytes,
    version_text: bytes,
) -> None:
    fields = [
        (name, value)
        for name, value in fields
        if name.lower() not in (b"host", b"content-length", b"transfer-encoding")
    ]
    path = b"/" + b"/".join(segments)
    target = path if query is None else path + b"?" + query
    lines = [b"%b:%b%b%b" % (name, spaces, value, spaces) for name, value in fields]
    request = parse_head(head(method + b" " + target + b" " + version_text, b"Host: h", *lines))
    assert request.method == method.decode()
    assert target_path(request.target) == path.decode()
    assert request.minor == (0 if version_text == b"HTTP/1.0" else 1)
    expected = {"host": "h"}
    for name, value in fields:
        expected[name.decode().lower()] = value.decode()
    assert request.headers == expected
    assert request.content_length is None
    assert request.chunked is False


# --- RFC 9110/9112 rules on repeated and control characters (each once a bug) ---


def test_absolute_form_query_with_slash() -> None:
    # http://host:1?x/y has the path "/" (empty) and the query "x/y"; _path takes "/y".
    request = parse_head(head(b"GET http://host:1?x/y HTTP/1.1", b"Host: host:1"))
    assert target_path(request.target) == "/"


@pytest.mark.parametrize("line", [b"X-A: a\nContent-Length: 5", b"X-A: a\rb", b"X-A: a\x00b"])
def test_control_characters_in_field_values(line: bytes) -> None:
    # RFC 9110 §5.5: a field value with CR, LF or NUL must be rejected (or those replaced by SP).
    # A bare LF here lets a front proxy that splits lines on LF see a Content-Length this
    # parser does not see (request smuggling).
    assert refused(head(b"POST /mcp HTTP/1.1", b"Host: x", line)).status == 400


def test_http10_close_wins_over_keep_alive() -> None:
    # RFC 9112 §9.3: the close option means the connection will close after this response.
    request = parse_head(head(b"GET / HTTP/1.0", b"Connection: keep-alive, close"))
    assert request.keep_alive is False


def test_repeated_connection_headers_combine() -> None:
    request = parse_head(
        head(b"GET / HTTP/1.1", b"Host: x", b"Connection: close", b"Connection: keep-alive")
    )
    assert request.keep_alive is False


def test_several_hosts_refused() -> None:
    # RFC 9112 §3.2: a server MUST answer 400 to a request with more than one Host field.
    assert refused(head(b"GET / HTTP/1.1", b"Host: a", b"Host: b")).status == 400


def test_repeated_transfer_encoding_combines() -> None:
    # The two lines mean "gzip, chunked", which is refused with 501 when on one line.
    data = head(
        b"POST / HTTP/1.1", b"Host: x", b"Transfer-Encoding: gzip", b"Transfer-Encoding: chunked"
    )
    assert refused(data).status == 501
