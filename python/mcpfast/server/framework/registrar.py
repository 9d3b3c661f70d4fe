"""`Registrar`: the registry an author fills, and its decorators: tools, resources and
templates, prompts, completers and MCP App resources; what an entry needs (`scopes_for`,
`declared_scopes`) and what serves a URI (`resource_for`). `Server` is a `Registrar`; what it
declares beyond its registry (extensions, a card, skills) and how it tells of changes are
`app`'s."""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Unpack

import msgspec

from ...protocol.apps import APP_MIME_TYPE, UI_EXTENSION, UI_SCHEME, resource_meta, tool_link
from ...protocol.extensions import OLDEST
from ...protocol.limits import Rate
from ...protocol.methods import PROMPT, REFERENCE, RESOURCE, TOOL
from ...types import (
    Annotations,
    CompletionRef,
    Icon,
    Prompt,
    PromptArgument,
    Resource,
    ResourceTemplate,
    Tool,
    ToolAnnotations,
)
from .call import reached
from .context import Context
from .functions import Output, header_declarations, inspect_function, output_for
from .registry import (
    TASK_SUPPORT,
    TOOL_NAME,
    CompleterEntry,
    F,
    PromptEntry,
    ResourceEntry,
    TemplateEntry,
    ToolEntry,
    ToolOptions,
    doc_of,
    icons_of,
    limits_of,
    template_pattern,
)

_NO_SCOPES: frozenset[str] = frozenset()


class Registrar(ABC):
    """The registry of a `Server` (see there for ``scopes`` and ``method_scopes``)."""

    def __init__(
        self,
        scopes: list[str] | tuple[str, ...] | frozenset[str],
        method_scopes: Mapping[str, list[str] | tuple[str, ...] | frozenset[str]] | None,
    ) -> None:
        self.tools: dict[str, ToolEntry] = {}
        self.resources: dict[str, ResourceEntry] = {}
        self.templates: dict[str, TemplateEntry] = {}
        self.prompts: dict[str, PromptEntry] = {}
        self.completers: dict[tuple[str, str], CompleterEntry] = {}
        self.scopes = frozenset(scopes)
        self.method_scopes = {m: frozenset(v) for m, v in (method_scopes or {}).items()}
        self._scoped = any(self.method_scopes.values())
        """Whether a method or an entry ever registered needs scopes of its own (if none does,
        `scopes_for` answers at once: the common case)."""
        self.reach_scopes: dict[str, Callable[[Any], frozenset[str]]] = {
            TOOL: self._tool_scopes,
            PROMPT: self._prompt_scopes,
            RESOURCE: self._resource_scopes,
            REFERENCE: self._reference_scopes,
        }
        """The scopes of an object a request reaches (`protocol.methods.Reach`), by its kind:
        ``reach_scopes[kind](key)``, used by `scopes_for`. A task's are not here: they are its
        tool's, read from the bus by the endpoint."""
        self.apps: dict[str, dict[str, Any]] = {}
        """The MCP Apps UI resources (`app_resource`), by ``ui://`` URI: their ``_meta.ui``."""

    @abstractmethod
    def extension(
        self, identifier: str, settings: Mapping[str, Any] | None = None, *, since: str = OLDEST
    ) -> None:
        """Declare an extension (`Server.extension`)."""

    @abstractmethod
    def _changed(self, kind: str) -> None:
        """Tell listeners that the ``kind`` (`LIST_TOPICS`) registry changed."""

    # ----------------------------------------------------------------------------- registration

    def tool(self, name: str | None = None, **options: Unpack[ToolOptions]) -> Callable[[F], F]:
        """Register a function as a tool: the decorator form of `add_tool`, same options."""

        def register(fn: F) -> F:
            self.add_tool(fn, name=name, **options)
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
        instant: bool = False,
        scopes: list[str] | tuple[str, ...] | frozenset[str] | None = None,
        app: str | None = None,
        visibility: Sequence[str] = ("model", "app"),
        rate_limit: str | Rate | None = None,
        concurrency: int | None = None,
        timeout: float | None = None,
    ) -> None:
        """Register a function as a tool; listeners hear of the change. Its parameters (but a
        `Context` one) are the arguments; a typed return declares an ``outputSchema``. ``task``
        is the tasks-extension support: ``forbidden``, ``optional`` or ``required``. With
        ``defer_task`` a task-capable tool first runs in the request (it may ask for input
        there) and becomes a task only when it calls ``await ctx.start_task()``.

        An ``async def`` runs on the event loop. A plain ``def`` runs on a worker thread
        (``trio.to_thread.run_sync``, at most `Config.thread_limit` at once per endpoint), so
        it may block. Its `Context` works from the thread through Trio: for example
        ``trio.from_thread.run(ctx.report_progress, 1, 2)`` or
        ``trio.from_thread.run(ctx.elicit, ...)``; its plain attributes can be read directly.
        A call cancelled while its thread runs (client gone, ``notifications/cancelled``, its
        ``timeout``, shutdown) is answered at once; the thread runs on, keeping its slot, and
        its return is dropped (it may call ``trio.from_thread.check_cancelled()`` to stop).
        ``instant=True`` runs a plain ``def`` on the event loop instead (no thread hop, no
        watch for the client going away): only for a handler that never blocks, since while it
        runs nothing else on the worker does; it cannot use the `Context`'s async methods.

        The name (``name``, else the function's) must be 1 to 128 of ``A-Z a-z 0-9 _ - .``
        (the spec's rule, which clients may hold to: `TOOL_NAME`).

        ``scopes``: on a protected server, the OAuth scopes a ``tools/call`` of this tool
        needs (else 403 ``insufficient_scope`` naming them); ``tools/list`` still lists it.

        ``app``: the ``ui://`` resource of the MCP App that shows this tool's results
        (`app_resource`), linked as ``_meta.ui.resourceUri`` with ``visibility`` (``model``:
        the host's model may call it, ``app``: the app may); declares the MCP Apps extension.
        Only a client that declared the extension sees the link, and an app-only tool
        (``visibility=["app"]``); its results always keep a text content block for the others.

        ``rate_limit`` (``"10/min"``, each caller its own), ``concurrency`` (calls at once on a
        worker) and ``timeout`` (seconds): `protocol.limits.ToolLimits`; None: the server's.

        Raises:
            ValueError: for an unknown ``task`` value, a tool name outside the spec's rule, an
                invalid ``x-mcp-header`` declaration, an ``app`` that is not ``ui://``, a
                ``visibility`` other than ``model`` and/or ``app``, or a bad limit.
        """
        if task not in TASK_SUPPORT:
            raise ValueError(f"task must be one of {TASK_SUPPORT}")
        name = name or fn.__name__
        if not TOOL_NAME.match(name):
            raise ValueError(
                f"tool name {name!r} breaks the spec's rule: 1 to 128 characters, only ASCII "
                "letters, digits, '_', '-' and '.'"
            )
        signature = inspect_function(fn, f"{name}_arguments", Context, instant=instant)
        schema = input_schema if input_schema is not None else signature.input_schema
        output = output_for(signature.return_type)
        if output_schema is not None:
            output = Output(schema=output_schema, wrap=False)
        if isinstance(annotations, dict):
            annotations = msgspec.convert(annotations, ToolAnnotations)
        if app is not None:
            meta = {**(meta or {}), "ui": tool_link(app, visibility)}
        definition = Tool(
            name=name,
            inputSchema=schema,
            title=title if title is not None else msgspec.UNSET,
            description=description if description is not None else (doc_of(fn) or msgspec.UNSET),
            outputSchema=output.schema if output.schema is not None else msgspec.UNSET,
            annotations=annotations if annotations is not None else msgspec.UNSET,
            icons=icons_of(icons),
            execution={"taskSupport": task} if task != "forbidden" else msgspec.UNSET,
            meta=meta if meta is not None else msgspec.UNSET,
        )
        self.tools[name] = ToolEntry(
            definition=definition,
            fn=fn,
            signature=signature,
            output=output,
            headers=header_declarations(name, schema),
            task_support=task,
            defer_task=defer_task,
            scopes=frozenset(scopes or ()),
            app=app,
            limits=limits_of(rate_limit, concurrency, timeout),
        )
        if app is not None:
            self.extension(UI_EXTENSION)
        self._scoped = self._scoped or bool(scopes)
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
        instant: bool = False,
        scopes: list[str] | tuple[str, ...] | frozenset[str] | None = None,
    ) -> Callable[[F], F]:
        """Register a resource; a URI with ``{placeholders}`` registers a template whose
        placeholders are the function's parameters. A plain ``def`` runs on a worker thread
        unless ``instant=True`` (as for `add_tool`).

        URI templates (RFC 6570) are matched against ``resources/read`` URIs with this subset
        of the RFC, the one resource templates use in practice: ``{name}`` (level 1, simple
        expansion) matches one or more characters up to the next ``/``; ``{+name}`` (level 2,
        reserved expansion) and ``{name*}`` (the explode modifier) match one or more of any
        character, ``/`` included. The matched text is passed as is (not percent-decoded).
        Not supported: several variables in one expression (``{x,y}``), the other level-3
        operators (``{#x}``, ``{.x}``, ``{/x}``, ``{;x}``, ``{?x}``, ``{&x}``) and prefix
        modifiers (``{x:3}``); such a template registers, but its expressions are read as plain
        names and URIs that need the operator's syntax do not match. The first registered
        template that matches a URI serves it (fixed URIs are tried first). ``scopes``: on a
        protected server, what every request reaching it needs: a ``resources/read``, a
        subscribe or unsubscribe, and for a template a ``completion/complete`` of it."""

        def register(fn: F) -> F:
            ann = annotations
            if isinstance(ann, dict):
                ann = msgspec.convert(ann, Annotations)
            common: dict[str, Any] = {
                "name": name or fn.__name__,
                "title": title if title is not None else msgspec.UNSET,
                "description": doc_of(fn) or msgspec.UNSET if description is None else description,
                "mimeType": mime_type if mime_type is not None else msgspec.UNSET,
                "annotations": ann if ann is not None else msgspec.UNSET,
                "icons": icons_of(icons),
            }
            signature = inspect_function(fn, f"{common['name']}_params", Context, instant=instant)
            if "{" in uri:
                self.templates[uri] = TemplateEntry(
                    definition=ResourceTemplate(uriTemplate=uri, **common),
                    pattern=template_pattern(uri),
                    fn=fn,
                    signature=signature,
                    scopes=frozenset(scopes or ()),
                )
            else:
                self.resources[uri] = ResourceEntry(
                    definition=Resource(uri=uri, **common),
                    fn=fn,
                    signature=signature,
                    scopes=frozenset(scopes or ()),
                )
            self._scoped = self._scoped or bool(scopes)
            self._changed("resources")
            return fn

        return register

    def app_resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        csp: Mapping[str, Sequence[str]] | None = None,
        permissions: Sequence[str] = (),
        domain: str | None = None,
        prefers_border: bool | None = None,
        instant: bool = False,
        scopes: list[str] | tuple[str, ...] | frozenset[str] | None = None,
    ) -> Callable[[F], F]:
        """Register the UI resource of an MCP App (SEP-1865): the function returns its HTML,
        served as ``text/html;profile=mcp-app`` with ``_meta.ui`` on its contents: ``csp``
        (``connect_domains``, ``resource_domains``, ``frame_domains``, ``base_uri_domains``:
        the origins the sandboxed page may reach), the sandbox ``permissions`` it asks for
        (``camera``, ``microphone``, ``geolocation``, ``clipboardWrite``), its ``domain`` and
        ``prefers_border``. Declares the MCP Apps extension (``io.modelcontextprotocol/ui``);
        link the resource from a tool with ``app=uri`` (`add_tool`). Otherwise as `resource`.

        Raises:
            ValueError: ``uri`` is not a fixed ``ui://`` URI, or an unknown CSP key or
                permission.
        """
        if not uri.startswith(UI_SCHEME) or "{" in uri or len(uri) == len(UI_SCHEME):
            raise ValueError(f"an MCP App resource needs a fixed ui:// URI, not {uri!r}")
        ui = resource_meta(csp, permissions, domain, prefers_border)
        register = self.resource(
            uri,
            name=name,
            title=title,
            description=description,
            mime_type=APP_MIME_TYPE,
            instant=instant,
            scopes=scopes,
        )

        def registered(fn: F) -> F:
            self.apps[uri] = ui
            self.extension(UI_EXTENSION)
            return register(fn)

        return registered

    def prompt(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        icons: list[Icon] | list[dict[str, Any]] | None = None,
        arguments: Mapping[str, str] | None = None,
        instant: bool = False,
        scopes: list[str] | tuple[str, ...] | frozenset[str] | None = None,
    ) -> Callable[[F], F]:
        """Register a prompt; its string parameters are its arguments (``arguments`` may give
        each a description). A plain ``def`` runs on a worker thread unless ``instant=True``
        (as for `add_tool`). ``scopes``: on a protected server, what a ``prompts/get`` or a
        ``completion/complete`` of it needs."""

        def register(fn: F) -> F:
            prompt_name = name or fn.__name__
            signature = inspect_function(fn, f"{prompt_name}_prompt", Context, instant=instant)
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
                    else (doc_of(fn) or msgspec.UNSET),
                    arguments=args if args else msgspec.UNSET,
                    icons=icons_of(icons),
                ),
                fn=fn,
                signature=signature,
                scopes=frozenset(scopes or ()),
            )
            self._scoped = self._scoped or bool(scopes)
            self._changed("prompts")
            return fn

        return register

    def completion(
        self, *, prompt: str | None = None, template: str | None = None, instant: bool = False
    ) -> Callable[[F], F]:
        """Register the completer of a prompt's or a resource template's arguments:
        ``fn(argument: str, value: str, context: dict) -> list[str]`` (may be async; a plain
        ``def`` runs on a worker thread unless ``instant=True``, as for `add_tool`)."""
        if (prompt is None) == (template is None):
            raise ValueError("give exactly one of prompt= or template=")
        key = ("ref/prompt", prompt) if prompt is not None else ("ref/resource", str(template))

        def register(fn: F) -> F:
            on_thread = not instant and not inspect.iscoroutinefunction(fn)
            self.completers[key] = CompleterEntry(fn=fn, on_thread=on_thread)
            return fn

        return register

    def scopes_for(
        self, method: str | None, name: str | None, params: bytes | None = None
    ) -> frozenset[str]:
        """The OAuth scopes one message needs beyond the server's own ``scopes``: its method's
        (``method_scopes``) and those of every object it reaches, whatever the method
        (`call.reached`, from the method table: the tool called, the prompt got or completed,
        the resource read or subscribed to, the template completed; `reach_scopes`). ``name``
        is the message's routed member, ``params`` its raw params."""
        if not self._scoped or method is None:
            return _NO_SCOPES
        need = self.method_scopes.get(method, _NO_SCOPES)
        reach_scopes = self.reach_scopes
        for kind, key in reached(method, name, params):
            resolve = reach_scopes.get(kind)
            scopes = resolve(key) if resolve is not None else _NO_SCOPES
            if scopes:
                need = need | scopes if need else scopes
        return need

    def resource_for(self, uri: str) -> tuple[ResourceEntry | TemplateEntry, dict[str, Any]] | None:
        """What serves ``uri`` and its arguments: the fixed resource (none), else the first
        template matching it (its placeholders' matched text); None: nothing does."""
        entry = self.resources.get(uri)
        if entry is not None:
            return entry, {}
        for template in self.templates.values():
            match = template.pattern.match(uri)
            if match is not None:
                return template, match.groupdict()
        return None

    def _tool_scopes(self, name: str) -> frozenset[str]:
        entry = self.tools.get(name)
        return entry.scopes if entry is not None else _NO_SCOPES

    def _prompt_scopes(self, name: str) -> frozenset[str]:
        entry = self.prompts.get(name)
        return entry.scopes if entry is not None else _NO_SCOPES

    def _resource_scopes(self, uri: str) -> frozenset[str]:
        found = self.resource_for(uri)
        return found[0].scopes if found is not None else _NO_SCOPES

    def _reference_scopes(self, ref: CompletionRef) -> frozenset[str]:
        """The scopes of what a completion reference names: a prompt (``ref/prompt``), a
        template by its ``uriTemplate``, else the resource of that URI (``ref/resource``)."""
        if ref.type == "ref/prompt":
            return self._prompt_scopes(ref.name or "")
        if ref.type == "ref/resource" and ref.uri is not None:
            template = self.templates.get(ref.uri)
            return template.scopes if template is not None else self._resource_scopes(ref.uri)
        return _NO_SCOPES

    def declared_scopes(self) -> frozenset[str]:
        """Every scope the server, its methods, tools, resources and prompts name."""
        out = set(self.scopes)
        for scopes in self.method_scopes.values():
            out |= scopes
        for registry in (self.tools, self.prompts, self.resources, self.templates):
            for entry in registry.values():
                out |= entry.scopes
        return frozenset(out)
