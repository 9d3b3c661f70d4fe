"""2026-07-28 rules both sides share: the ``_meta`` every request carries, the checks a server
applies to a request before serving it (`check`), and what a client does with a result: the
retry that answers ``input_required`` (`retry_params`) and the ``resultType`` it may be
(`check_result_type`)."""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from typing import Any

from .. import codec, jsonrpc
from ..errors import CodecError, ProtocolError, TransportError
from ..types import (
    CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    LOG_LEVEL_KEY,
    LOG_LEVELS,
    TASKS_EXTENSION,
    VERSION_KEY,
    RequestMeta,
)
from ..versions import ALL_VERSIONS, MODERN_VERSIONS


def request_meta(
    version: str,
    capabilities: dict[str, Any],
    client_info: dict[str, Any],
    log_level: str | None = None,
    extensions: dict[str, Any] | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``_meta`` of a 2026-07-28 request (any transport): the revision, the client's
    capabilities (with ``extensions`` inside them), its info, the log level it opts in to, and
    ``extra`` keys (a progress token, trace context)."""
    caps = dict(capabilities)
    if extensions:
        caps["extensions"] = extensions
    meta: dict[str, Any] = {
        VERSION_KEY: version,
        CAPABILITIES_KEY: caps,
        CLIENT_INFO_KEY: client_info,
    }
    if log_level is not None:
        meta[LOG_LEVEL_KEY] = log_level
    if extra:
        meta.update(extra)
    return meta


def check(
    headers: Mapping[str, str] | None,
    message: codec.Message,
    meta: RequestMeta | None,
    param_headers: Sequence[tuple[str, Sequence[str]]] = (),
    *,
    served_methods: Container[str],
    invalid: Exception | None = None,
) -> tuple[str, RequestMeta]:
    """Check one 2026-07-28 request; return the revision it asks for and its ``_meta``.

    Order of checks for a request (`shared/spec/DIGEST.md` §3.12):
      1. ``MCP-Protocol-Version`` header present and equal to the ``_meta`` version  -> -32020, 400
      2. version served                                                            -> -32022, 400
      3. ``_meta`` carries protocolVersion and clientCapabilities                  -> -32602, 400
      4. ``Mcp-Method``/``Mcp-Name``/``Mcp-Param-*`` mirror the body               -> -32020, 400
      5. method known                                                              -> -32601, 404
      6. capabilities the request needs were declared                              -> -32021, 400

    The header's agreement with the ``_meta`` version comes first, before the version is
    judged: a header that differs from the body is -32020 whatever version it names (the
    conformance suite's ``request-metadata`` scenario asks for that; the DIGEST's routing note
    lists the version check before the equality checks, which would make it -32022).

    Then, for a known method: params fit the method (``invalid``, the decoding error the
    caller met) and the ``_meta`` log level is one of `LOG_LEVELS` -> -32602, 200.

    Check 6 depends on what the request reaches (the tool's task support, the tasks
    extension), so the server's handlers apply it with
    `mcpfast.protocol.capabilities.missing_capability`; this function does checks 1-5.

    ``headers`` (lower-case names) is None off HTTP (stdio), where checks 1 and 4 do not
    apply. ``message`` is the framed request (its method, routed name, ``_meta`` version and
    raw params), ``meta`` its decoded ``_meta`` (None when absent or undecodable),
    ``param_headers`` the called tool's ``x-mcp-header`` mirrors, ``served_methods`` the
    methods the server has handlers for.

    Raises:
        ProtocolError: with the code, data and HTTP status of the first failed check.
    """
    requested = message.version
    if headers is not None:
        header = headers.get("mcp-protocol-version")
        if header is None:
            raise ProtocolError(
                jsonrpc.HEADER_MISMATCH,
                "Header mismatch: MCP-Protocol-Version missing",
                {"header": "MCP-Protocol-Version", "reason": "missing"},
                http_status=400,
            )
        requested = header.strip(" \t")
        if message.version is not None and requested != message.version:
            raise ProtocolError(
                jsonrpc.HEADER_MISMATCH,
                "Header mismatch: MCP-Protocol-Version mismatch",
                {"header": "MCP-Protocol-Version", "reason": "mismatch"},
                http_status=400,
            )
    if requested not in MODERN_VERSIONS:
        raise ProtocolError(
            jsonrpc.UNSUPPORTED_VERSION,
            "Unsupported protocol version",
            {"supported": list(ALL_VERSIONS), "requested": requested},
            http_status=400,
        )
    if (
        meta is None
        or type(meta.protocol_version) is not str
        or type(meta.client_capabilities) is not dict
    ):
        raise ProtocolError(
            jsonrpc.INVALID_PARAMS,
            "Invalid params: _meta must carry io.modelcontextprotocol/protocolVersion "
            "and io.modelcontextprotocol/clientCapabilities",
            http_status=400,
        )
    if headers is not None:
        try:
            codec.check_headers(headers, message, param_headers)
        except CodecError as exc:
            raise ProtocolError(exc.code, exc.message, exc.data, http_status=400) from None
    if message.method not in served_methods:
        raise ProtocolError(
            jsonrpc.METHOD_NOT_FOUND, f"Method not found: {message.method}", http_status=404
        )
    if invalid is not None:
        raise ProtocolError(jsonrpc.INVALID_PARAMS, f"Invalid params: {invalid}")
    if meta.log_level is not None and meta.log_level not in LOG_LEVELS:
        raise ProtocolError(
            jsonrpc.INVALID_PARAMS, "Invalid log level", {"logLevel": meta.log_level}
        )
    return requested, meta


def retry_params(
    params: dict[str, Any], result: dict[str, Any], responses: dict[str, Any]
) -> dict[str, Any]:
    """The params of the retry that answers an ``input_required`` result: the request's own
    params, the answers (``inputResponses``) and the exact ``requestState`` it gave."""
    retry = {k: v for k, v in params.items() if k not in ("inputResponses", "requestState")}
    if responses:
        retry["inputResponses"] = responses
    if "requestState" in result:
        retry["requestState"] = result["requestState"]
    return retry


def check_result_type(method: str, kind: Any, extensions: dict[str, Any] | None) -> None:
    """Refuse a result whose ``resultType`` the request did not allow: ``complete`` always,
    ``task`` for a ``tools/call`` that declared the tasks extension (absent counts as
    ``complete``; ``input_required`` is handled before).

    Raises:
        TransportError: any other value.
    """
    if kind == "complete":
        return
    if kind == "task" and method == "tools/call" and TASKS_EXTENSION in (extensions or {}):
        return
    raise TransportError(
        f"the server answered {method} with resultType {kind!r}, which this request did not "
        "allow" + (" (the tasks extension was not declared)" if kind == "task" else "")
    )
