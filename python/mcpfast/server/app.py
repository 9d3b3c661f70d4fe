"""`Server`: the registry of tools, resources, prompts and completions, and the handlers of the
feature methods they answer. Era rules (sessions, ``_meta``, headers) live in the transports'
dispatch layer; this module only knows the features."""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import msgspec
import trio

from .. import jsonrpc
from ..errors import ClientCapabilityError, ProtocolError
from ..protocol.capabilities import server_capabilities
from ..protocol.headers import header_params
from ..types import (
    Annotations,
    CompleteParams,
    GetPromptParams,
    Icon,
    Implementation,
    ListParams,
    Prompt,
    PromptArgument,
    ReadResourceParams,
    Resource,
    ResourceTemplate,
    TextContent,
    Tool,
    ToolAnnotations,
    ToolResult,
)
from .bus import Bus, LocalBus
from .call import Call
from .context import Context
from .functions import (
    Output,
    Signature,
    inspect_function,
    output_for,
    prompt_messages,
    resource_contents,
    tool_result,
)

F = TypeVar("F", bound=Callable[..., Any])

LIST_TOPICS = {"tools": "list/tools", "prompts": "list/prompts", "resources": "list/resources"}
TASK_SUPPORT = ("forbidden", "optional", "required")


def resource_topic(uri: str) -> str:
    """The bus topic of one resource's updates."""
    return "resource/" + uri


class ToolEntry(msgspec.Struct, kw_only=True):
    definition: Tool
    fn: Callable[..., Any]
    signature: Signature
    output: Output
    headers: tuple[tuple[str, tuple[str, ...]], ...]
    task_support: str
    defer_task: bool = False


class ResourceEntry(msgspec.Struct, kw_only=True):
    definition: Resource
    fn: Callable[..., Any]
    signature: Signature


class TemplateEntry(msgspec.Struct, kw_only=True):
    definition: ResourceTemplate
    pattern: re.Pattern[str]
    fn: Callable[..., Any]
    signature: Signature


class PromptEntry(msgspec.Struct, kw_only=True):
    definition: Prompt
    fn: Callable[..., Any]
    signature: Signature


def _template_pattern(template: str) -> re.Pattern[str]:
    parts = re.split(r"(\{[^}]+\})", template)
    regex = ""
    for part in parts:
        if part.startswith("{") and part.endswith("}"):
            name = part[1:-1]
            greedy = name.startswith("+") or name.endswith("*")
            name = name.strip("+*")
            regex += f"(?P<{name}>{'.+' if greedy else '[^/]+'})"
        else:
            regex += re.escape(part)
    return re.compile(regex + r"\Z")


def _icons(icons: list[Icon] | list[dict[str, Any]] | None) -> Any:
    if icons is None:
        return msgspec.UNSET
    return [i if isinstance(i, Icon) else msgspec.convert(i, Icon) for i in icons]


def _doc(fn: Callable[..., Any]) -> str | None:
    doc = fn.__doc__
    return doc.strip() if doc else None


async def invoke(
    fn: Callable[..., Any], signature: Signature, args: Any, context: Callable[[], Context]
) -> Any:
    """Call a handler with decoded arguments (a Struct or dict), and a context made by
    ``context()`` if it takes one."""
    if isinstance(args, msgspec.Struct):
        kwargs = msgspec.structs.asdict(args)
    else:
        kwargs = dict(args)
    if signature.context_param is not None:
        kwargs[signature.context_param] = context()
    if signature.is_async:
        return await fn(**kwargs)
    return fn(**kwargs)


class Server:
    """An MCP server: register features with the decorators, then serve it with
    `mcpfast.serve` (HTTP) or `mcpfast.serve_stdio`.

    Args:
        name: ``serverInfo.name``.
        version: ``serverInfo.version``.
        instructions: guidance for the model, sent in ``server/discover`` and ``initialize``.
        page_size: items per page of the list methods.
        cache_ttl_ms: the ``ttlMs`` hint on cacheable 2026-07-28 results.
        cache_scope: ``"public"`` or ``"private"``.
        bus: where change notifications travel (in-process by default).
    """

    def __init__(
        self,
        name: str,
        version: str = "0.1.0",
        *,
        title: str | None = None,
        description: str | None = None,
        instructions: str | None = None,
        website_url: str | None = None,
        icons: list[Icon] | list[dict[str, Any]] | None = None,
        page_size: int = 100,
        cache_ttl_ms: int = 60_000,
        cache_scope: str = "public",
        bus: Bus | None = None,
    ) -> None:
        self.info = Implementation(
            name=name,
            version=version,
            title=title if title is not None else msgspec.UNSET,
            description=description if description is not None else msgspec.UNSET,
            websiteUrl=website_url if website_url is not None else msgspec.UNSET,
            icons=_icons(icons),
        )
        self.instructions = instructions
        self.page_size = page_size
        self.cache_ttl_ms = cache_ttl_ms
        self.cache_scope = cache_scope
        self.bus: Bus = bus if bus is not None else LocalBus()
        self.tools: dict[str, ToolEntry] = {}
        self.resources: dict[str, ResourceEntry] = {}
        self.templates: dict[str, TemplateEntry] = {}
        self.prompts: dict[str, PromptEntry] = {}
        self.completers: dict[tuple[str, str], Callable[..., Any]] = {}
        self.task_store: Any = None
        self.nursery: trio.Nursery | None = None

    # ----------------------------------------------------------------------------- registration

    def tool(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | dict[str, Any] | None = None,
        icons: list[Icon] | list[dict[str, Any]] | None = None,
        input_schema: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | None = None,
        task: str = "forbidden",
        defer_task: bool = False,
        meta: dict[str, Any] | None = None,
    ) -> Callable[[F], F]:
        """Register a function as a tool. Its parameters (but a `Context` one) are the arguments;
        a typed return declares an ``outputSchema``. ``task`` is the tasks-extension support:
        ``forbidden``, ``optional`` or ``required``. With ``defer_task`` a task-capable tool first
        runs in the request (it may ask for input there) and becomes a task only when it calls
        ``await ctx.start_task()``.

        Raises:
            ValueError: for an unknown ``task`` value or an invalid ``x-mcp-header`` declaration.
        """

        def register(fn: F) -> F:
            self.add_tool(
                fn,
                name=name,
                title=title,
                description=description,
                annotations=annotations,
                icons=icons,
                input_schema=input_schema,
                output_schema=output_schema,
                task=task,
                defer_task=defer_task,
                meta=meta,
            )
            return fn

        return register

    def add_tool(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | dict[str, Any] | None = None,
        icons: list[Icon] | list[dict[str, Any]] | None = None,
        input_schema: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | None = None,
        task: str = "forbidden",
        defer_task: bool = False,
        meta: dict[str, Any] | None = None,
    ) -> None:
        """Register a tool (the non-decorator form of `tool`); listeners hear of the change."""
        if task not in TASK_SUPPORT:
            raise ValueError(f"task must be one of {TASK_SUPPORT}")
        name = name or fn.__name__
        signature = inspect_function(fn, f"{name}_arguments", Context)
        schema = input_schema if input_schema is not None else signature.input_schema
        output = output_for(signature.return_type)
        if output_schema is not None:
            output = Output(schema=output_schema, wrap=False)
        if isinstance(annotations, dict):
            annotations = msgspec.convert(annotations, ToolAnnotations)
        definition = Tool(
            name=name,
            inputSchema=schema,
            title=title if title is not None else msgspec.UNSET,
            description=description if description is not None else (_doc(fn) or msgspec.UNSET),
            outputSchema=output.schema if output.schema is not None else msgspec.UNSET,
            annotations=annotations if annotations is not None else msgspec.UNSET,
            icons=_icons(icons),
            execution={"taskSupport": task} if task != "forbidden" else msgspec.UNSET,
            meta=meta if meta is not None else msgspec.UNSET,
        )
        self.tools[name] = ToolEntry(
            definition=definition,
            fn=fn,
            signature=signature,
            output=output,
            headers=header_params(schema),
            task_support=task,
            defer_task=defer_task,
        )
        self._changed("tools")

    def remove_tool(self, name: str) -> None:
        """Remove a tool; listeners hear of the change."""
        del self.tools[name]
        self._changed("tools")

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        annotations: Annotations | dict[str, Any] | None = None,
        icons: list[Icon] | list[dict[str, Any]] | None = None,
    ) -> Callable[[F], F]:
        """Register a resource; a URI with ``{placeholders}`` registers a template whose
        placeholders are the function's parameters."""

        def register(fn: F) -> F:
            ann = annotations
            if isinstance(ann, dict):
                ann = msgspec.convert(ann, Annotations)
            common: dict[str, Any] = {
                "name": name or fn.__name__,
                "title": title if title is not None else msgspec.UNSET,
                "description": description
                if description is not None
                else (_doc(fn) or msgspec.UNSET),
                "mimeType": mime_type if mime_type is not None else msgspec.UNSET,
                "annotations": ann if ann is not None else msgspec.UNSET,
                "icons": _icons(icons),
            }
            signature = inspect_function(fn, f"{common['name']}_params", Context)
            if "{" in uri:
                self.templates[uri] = TemplateEntry(
                    definition=ResourceTemplate(uriTemplate=uri, **common),
                    pattern=_template_pattern(uri),
                    fn=fn,
                    signature=signature,
                )
            else:
                self.resources[uri] = ResourceEntry(
                    definition=Resource(uri=uri, **common), fn=fn, signature=signature
                )
            self._changed("resources")
            return fn

        return register

    def prompt(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        icons: list[Icon] | list[dict[str, Any]] | None = None,
        arguments: Mapping[str, str] | None = None,
    ) -> Callable[[F], F]:
        """Register a prompt; its string parameters are its arguments (``arguments`` may give
        each a description)."""

        def register(fn: F) -> F:
            prompt_name = name or fn.__name__
            signature = inspect_function(fn, f"{prompt_name}_prompt", Context)
            required = set(signature.input_schema.get("required", ()))
            args = [
                PromptArgument(
                    name=arg,
                    description=(arguments or {}).get(arg, msgspec.UNSET),
                    required=arg in required,
                )
                for arg in signature.names
            ]
            self.prompts[prompt_name] = PromptEntry(
                definition=Prompt(
                    name=prompt_name,
                    title=title if title is not None else msgspec.UNSET,
                    description=description
                    if description is not None
                    else (_doc(fn) or msgspec.UNSET),
                    arguments=args if args else msgspec.UNSET,
                    icons=_icons(icons),
                ),
                fn=fn,
                signature=signature,
            )
            self._changed("prompts")
            return fn

        return register

    def completion(
        self, *, prompt: str | None = None, template: str | None = None
    ) -> Callable[[F], F]:
        """Register the completer of a prompt's or a resource template's arguments:
        ``fn(argument: str, value: str, context: dict) -> list[str]`` (may be async)."""
        if (prompt is None) == (template is None):
            raise ValueError("give exactly one of prompt= or template=")
        key = ("ref/prompt", prompt) if prompt is not None else ("ref/resource", str(template))

        def register(fn: F) -> F:
            self.completers[key] = fn
            return fn

        return register

    def _changed(self, kind: str) -> None:
        if self.nursery is not None:
            self.nursery.start_soon(
                self.bus.publish,
                LIST_TOPICS[kind],
                {
                    "method": f"notifications/{kind}/list_changed",
                },
            )

    async def resource_updated(self, uri: str) -> None:
        """Tell subscribers that a resource changed (``notifications/resources/updated``)."""
        await self.bus.publish(
            resource_topic(uri),
            {"method": "notifications/resources/updated", "params": {"uri": uri}},
        )

    # ----------------------------------------------------------------------------- capabilities

    def capabilities(self, version: str) -> dict[str, Any]:
        """The server capabilities for a revision."""
        return server_capabilities(version)

    # ------------------------------------------------------------------------------- pagination

    def _page(self, items: list[Any], cursor: str | None) -> tuple[list[Any], str | None]:
        start = 0
        if cursor is not None:
            start = _decode_cursor(cursor, len(items))
        end = start + self.page_size
        return items[start:end], (_encode_cursor(end) if end < len(items) else None)

    def _cache(self, call: Call, result: dict[str, Any]) -> dict[str, Any]:
        if call.modern:
            result["ttlMs"] = self.cache_ttl_ms
            result["cacheScope"] = self.cache_scope
        return result

    def list_result(
        self, call: Call, params: ListParams, key: str, items: list[Any]
    ) -> dict[str, Any]:
        """A page of ``items`` under ``key`` with ``nextCursor`` and cache hints."""
        page, next_cursor = self._page(items, params.cursor)
        result: dict[str, Any] = {key: page}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return self._cache(call, result)

    # ---------------------------------------------------------------------------------- features

    def context(self, call: Call) -> Context:
        """The handler context for a call."""
        return Context(
            server=self,
            request_id=call.id,
            protocol_version=call.version,
            client_capabilities=call.capabilities,
            client_info=call.client_info,
            log_level=call.log_level,
            progress_token=call.progress_token,
            emitter=call.emitter,
            input_source=call.input,
            task_starter=call.start_task,
            session_id=call.session_id,
        )

    def find_tool(self, name: str) -> ToolEntry:
        """The tool called ``name``.

        Raises:
            ProtocolError: -32602 for an unknown tool.
        """
        entry = self.tools.get(name)
        if entry is None:
            raise ProtocolError(jsonrpc.INVALID_PARAMS, f"Unknown tool: {name}", {"name": name})
        return entry

    async def run_tool(self, call: Call, entry: ToolEntry, arguments: bytes) -> ToolResult:
        """Validate the arguments, run the tool, and turn what it returns or raises into a
        result. `ProtocolError` (and the modern era's input-required signal) pass through, but
        for a legacy session a `ClientCapabilityError` is a tool error that says what happened."""
        try:
            args = entry.signature.decoder.decode(arguments)
        except msgspec.ValidationError as exc:
            return ToolResult(content=[TextContent(text=f"Invalid arguments: {exc}")], isError=True)
        except msgspec.DecodeError:
            return ToolResult(
                content=[TextContent(text="Invalid arguments: not a JSON object")], isError=True
            )
        try:
            value = await invoke(entry.fn, entry.signature, args, lambda: self.context(call))
        except ClientCapabilityError as exc:
            if call.modern:
                raise
            return ToolResult(content=[TextContent(text=exc.message)], isError=True)
        except (ProtocolError, ControlSignal):
            raise
        except Exception as exc:  # a tool that raises is a tool error, not a dead worker
            return ToolResult(
                content=[TextContent(text=str(exc) or type(exc).__name__)], isError=True
            )
        return tool_result(value, entry.output)

    async def read_resource(self, call: Call, params: ReadResourceParams) -> dict[str, Any]:
        """``resources/read``: a fixed resource, else the first matching template."""
        uri = params.uri

        def ctx() -> Context:
            return self.context(call)

        entry = self.resources.get(uri)
        if entry is not None:
            value = await invoke(entry.fn, entry.signature, {}, ctx)
            mime = entry.definition.mimeType
        else:
            for template in self.templates.values():
                match = template.pattern.match(uri)
                if match is not None:
                    value = await invoke(template.fn, template.signature, match.groupdict(), ctx)
                    mime = template.definition.mimeType
                    break
            else:
                if call.modern:
                    raise ProtocolError(jsonrpc.INVALID_PARAMS, "Resource not found", {"uri": uri})
                raise ProtocolError(
                    jsonrpc.RESOURCE_NOT_FOUND_LEGACY, "Resource not found", {"uri": uri}
                )
        contents = resource_contents(uri, value, mime if isinstance(mime, str) else None)
        return self._cache(call, {"contents": contents})

    async def get_prompt(self, call: Call, params: GetPromptParams) -> dict[str, Any]:
        """``prompts/get``."""
        entry = self.prompts.get(params.name)
        if entry is None:
            raise ProtocolError(
                jsonrpc.INVALID_PARAMS, f"Unknown prompt: {params.name}", {"name": params.name}
            )
        try:
            args = msgspec.convert(params.arguments or {}, entry.signature.arguments)
        except msgspec.ValidationError as exc:
            raise ProtocolError(
                jsonrpc.INVALID_PARAMS, f"Invalid prompt arguments: {exc}"
            ) from None
        value = await invoke(entry.fn, entry.signature, args, lambda: self.context(call))
        result: dict[str, Any] = {"messages": prompt_messages(value)}
        description = entry.definition.description
        if isinstance(description, str):
            result["description"] = description
        return result

    async def complete(self, call: Call, params: CompleteParams) -> dict[str, Any]:
        """``completion/complete``: at most 100 values, with ``total`` and ``hasMore``."""
        ref = params.ref
        key = (ref.type, ref.name if ref.type == "ref/prompt" else ref.uri)
        if ref.type == "ref/prompt" and ref.name not in self.prompts:
            raise ProtocolError(jsonrpc.INVALID_PARAMS, f"Unknown prompt: {ref.name}")
        completer = self.completers.get(key)  # type: ignore[arg-type]
        values: list[str] = []
        if completer is not None:
            arguments = (params.context or {}).get("arguments") or {}
            out = completer(params.argument.name, params.argument.value, arguments)
            values = list(await out if hasattr(out, "__await__") else out)
        return {
            "completion": {
                "values": values[:100],
                "total": len(values),
                "hasMore": len(values) > 100,
            }
        }


class ControlSignal(Exception):
    """Ends a modern-era handler run early; the dispatcher turns it into a result."""


class InputRequiredSignal(ControlSignal):
    """The handler needs input it does not have yet (an ``input_required`` result)."""

    def __init__(self, requests: dict[str, Any], answers: dict[str, Any]) -> None:
        super().__init__("input required")
        self.requests = requests
        self.answers = answers


class StartTaskSignal(ControlSignal):
    """The handler asked to continue as a task, carrying the answers gathered so far."""

    def __init__(self, answers: dict[str, Any]) -> None:
        super().__init__("start task")
        self.answers = answers


def _encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"o:{offset}".encode()).decode().rstrip("=")


def _decode_cursor(cursor: str, size: int) -> int:
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        kind, _, value = text.partition(":")
        offset = int(value)
    except (ValueError, UnicodeDecodeError):
        raise ProtocolError(jsonrpc.INVALID_PARAMS, "Invalid cursor", {"cursor": cursor}) from None
    if kind != "o" or not 0 <= offset <= size:
        raise ProtocolError(jsonrpc.INVALID_PARAMS, "Invalid cursor", {"cursor": cursor})
    return offset
