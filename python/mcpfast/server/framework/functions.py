"""Turn a handler function into what MCP needs: an input schema, a typed argument decoder, an
output schema and the conversion of its return value into content."""

from __future__ import annotations

import base64
import inspect
from collections.abc import Callable
from typing import Annotated, Any, get_args, get_origin, get_type_hints

import msgspec

from ...protocol.headers import ParamHeaders, header_params
from ...types import (
    AudioContent,
    Content,
    EmbeddedResource,
    ImageContent,
    PromptMessage,
    ResourceContents,
    ResourceLink,
    TextContent,
    ToolResult,
)

_CONTENT_TYPES = (TextContent, ImageContent, AudioContent, EmbeddedResource, ResourceLink)
_encoder = msgspec.json.Encoder()


def Header(name: str) -> msgspec.Meta:
    """Mark a tool argument to be mirrored in an `Mcp-Param-<name>` header (2026-07-28).

    Use as ``region: Annotated[str, Header("Region")]`` on a tool's own argument (a string,
    integer or boolean). The declaration must be *statically reachable* (through
    ``properties`` only): on a field of a nested Struct argument it would sit under
    ``$defs`` (reached through ``$ref``), so registering such a tool raises ``ValueError``
    (`header_declarations`); so does one inside a list, a union or an optional of a Struct.
    """
    return msgspec.Meta(extra_json_schema={"x-mcp-header": name})


def header_declarations(tool: str, schema: dict[str, Any]) -> ParamHeaders:
    """A tool's ``x-mcp-header`` declarations (`protocol.headers.header_params`), checked at
    registration.

    Raises:
        ValueError: a declaration the 2026-07-28 rules forbid (conforming clients would drop
            the tool), naming the tool and the declaration.
    """
    try:
        return header_params(schema)
    except ValueError as exc:
        hint = (
            " (Header() on a field of a nested Struct lands under $defs: declare it on a "
            "top-level argument instead)"
            if "$defs" in str(exc)
            else ""
        )
        raise ValueError(f"tool {tool!r}: {exc}{hint}") from None


class Signature(msgspec.Struct, kw_only=True):
    """What a handler's signature says: its arguments as a Struct and where the context goes."""

    arguments: type[msgspec.Struct]
    decoder: msgspec.json.Decoder[Any]
    input_schema: dict[str, Any]
    context_param: str | None
    names: tuple[str, ...]
    is_async: bool
    """A coroutine function (awaited on the event loop)."""
    return_type: Any
    on_thread: bool = False
    """A plain ``def`` that runs on a worker thread (the default); False for a coroutine
    function and for a plain ``def`` registered ``instant=True`` (called on the event loop)."""

    @property
    def waits(self) -> bool:
        """Whether a call may wait (awaited, or on a thread): the eras give it a cancel scope and
        watch the client; a call that does not wait (``instant=True``) runs inline."""
        return self.is_async or self.on_thread


def inspect_function(
    fn: Callable[..., Any], struct_name: str, context_type: type, *, instant: bool = False
) -> Signature:
    """Read a handler's parameters (all but the context one) into an argument Struct and schema;
    a plain ``def`` runs on a worker thread unless ``instant``."""
    hints = get_type_hints(fn, include_extras=True)
    fields: list[tuple[str, Any] | tuple[str, Any, Any]] = []
    context_param = None
    for param in inspect.signature(fn).parameters.values():
        hint = hints.get(param.name, Any)
        if _is_context(hint, context_type):
            context_param = param.name
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"{fn.__qualname__}: *args and **kwargs are not tool arguments")
        if param.default is inspect.Parameter.empty:
            fields.append((param.name, hint))
        else:
            fields.append((param.name, hint, param.default))
    arguments = msgspec.defstruct(struct_name, fields, kw_only=True)
    is_async = inspect.iscoroutinefunction(fn)
    return Signature(
        arguments=arguments,
        decoder=msgspec.json.Decoder(arguments),
        input_schema=object_schema(arguments),
        context_param=context_param,
        names=tuple(f[0] for f in fields),
        is_async=is_async,
        return_type=hints.get("return", inspect.Signature.empty),
        on_thread=not is_async and not instant,
    )


def _is_context(hint: Any, context_type: type) -> bool:
    if get_origin(hint) is Annotated:
        hint = get_args(hint)[0]
    return isinstance(hint, type) and issubclass(hint, context_type)


def object_schema(tp: Any) -> dict[str, Any]:
    """A self-contained JSON Schema for ``tp`` with the root inlined (no top-level ``$ref``)."""
    (root,), components = msgspec.json.schema_components([tp], ref_template="#/$defs/{name}")
    if "$ref" in root:
        name = root["$ref"].rsplit("/", 1)[1]
        root = dict(components.pop(name))
    root.pop("title", None)
    if components:
        root["$defs"] = components
    return root


# ------------------------------------------------------------------------------------- results


class Output(msgspec.Struct, kw_only=True):
    """How a tool's return value becomes a result: its output schema, whether it is wrapped,
    and the return annotation that declared the schema (None: a schema given as is)."""

    schema: dict[str, Any] | None
    wrap: bool
    type: Any = None

    def mismatch(self, structured: Any) -> str | None:
        """Why ``structured`` (a result's ``structuredContent``) does not fit the output
        schema, or None when it does (or there is no schema). A schema declared by a return
        annotation is checked by converting back to that type (msgspec, exact); a schema given
        as is, with ``jsonschema`` when it is installed (its default dialect 2020-12, no
        network ``$ref``), else only its top-level ``type: object`` and ``required``."""
        if self.schema is None:
            return None
        if self.type is not None:
            value = (
                structured.get("result")
                if self.wrap and isinstance(structured, dict)
                else structured
            )
            try:
                msgspec.convert(value, self.type, strict=False)
            except (msgspec.ValidationError, TypeError) as exc:
                return str(exc)
            return None
        return _schema_mismatch(self.schema, structured)


def output_for(return_type: Any) -> Output:
    """The output schema a return annotation declares (non-objects are wrapped as ``result``)."""
    if return_type in (inspect.Signature.empty, None, type(None), Any, str, ToolResult):
        return Output(schema=None, wrap=False)
    if _is_content_annotation(return_type):
        return Output(schema=None, wrap=False)
    try:
        schema = object_schema(return_type)
    except (TypeError, ValueError):
        return Output(schema=None, wrap=False)
    if schema.get("type") == "object":
        return Output(schema=schema, wrap=False, type=return_type)
    defs = schema.pop("$defs", None)
    wrapped: dict[str, Any] = {
        "type": "object",
        "properties": {"result": schema},
        "required": ["result"],
    }
    if defs:
        wrapped["$defs"] = defs
    return Output(schema=wrapped, wrap=True, type=return_type)


def _schema_mismatch(schema: dict[str, Any], instance: Any) -> str | None:
    try:
        import jsonschema
    except ImportError:  # not a dependency: the top level only
        if schema.get("type") == "object":
            if not isinstance(instance, dict):
                return f"expected an object, got {type(instance).__name__}"
            missing = [k for k in schema.get("required", ()) if k not in instance]
            if missing:
                return f"missing required properties {missing}"
        return None
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    error = jsonschema.exceptions.best_match(cls(schema).iter_errors(instance))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return f"{error.message} (at /{where})" if where else error.message


def _is_content_annotation(tp: Any) -> bool:
    args = get_args(tp)
    candidates = args if args else (tp,)
    return any(
        isinstance(c, type) and issubclass(c, (*_CONTENT_TYPES, PromptMessage))
        for a in candidates
        for c in (get_args(a) or (a,))
    )


def tool_result(value: Any, output: Output) -> ToolResult:
    """Convert what a tool returned into a `ToolResult`."""
    if type(value) is str and output.schema is None:  # the commonest result: one text block
        return ToolResult(content=[TextContent(text=value)])
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, _CONTENT_TYPES):
        return ToolResult(content=[value])
    if isinstance(value, list) and value and all(isinstance(v, _CONTENT_TYPES) for v in value):
        return ToolResult(content=value)
    if output.schema is not None:
        structured = msgspec.to_builtins(value)
        if output.wrap:
            structured = {"result": structured}
        return ToolResult(
            content=[TextContent(text=_encoder.encode(structured).decode())],
            structuredContent=structured,
        )
    return ToolResult(content=to_content(value))


def to_content(value: Any) -> list[Content]:
    """Content blocks for a plain value: text as is, bytes as a blob resource, the rest as JSON."""
    if value is None:
        return []
    if isinstance(value, str):
        return [TextContent(text=value)]
    if isinstance(value, _CONTENT_TYPES):
        return [value]
    if isinstance(value, list) and all(isinstance(v, _CONTENT_TYPES) for v in value) and value:
        return list(value)
    return [TextContent(text=_encoder.encode(value).decode())]


def resource_contents(uri: str, value: Any, mime_type: str | None) -> list[Any]:
    """Contents of a resource read: text, a base64 blob for bytes, or given contents."""
    if isinstance(value, ResourceContents):
        return [value]
    if isinstance(value, list) and value and all(isinstance(v, ResourceContents) for v in value):
        return value
    if isinstance(value, bytes):
        return [
            ResourceContents(
                uri=uri,
                blob=base64.b64encode(value).decode("ascii"),
                mimeType=mime_type or "application/octet-stream",
            )
        ]
    if not isinstance(value, str):
        value = _encoder.encode(value).decode()
        mime_type = mime_type or "application/json"
    return [ResourceContents(uri=uri, text=value, mimeType=mime_type or "text/plain")]


def prompt_messages(value: Any) -> list[PromptMessage]:
    """Messages of a prompt: a string becomes one user message; content blocks become user ones."""
    if isinstance(value, str):
        return [PromptMessage(role="user", content=TextContent(text=value))]
    if isinstance(value, PromptMessage):
        return [value]
    messages = []
    for item in value:
        if isinstance(item, PromptMessage):
            messages.append(item)
        elif isinstance(item, str):
            messages.append(PromptMessage(role="user", content=TextContent(text=item)))
        else:
            messages.append(PromptMessage(role="user", content=item))
    return messages
