"""`Server`: what an author declares: the server's identity and settings, the extensions, card
and skills it declares, what it advertises (`capabilities`), and how changes of its registry
reach listeners while it serves (`publishing`). The registry and its decorators are
`registrar`'s; what the feature methods do with it is `features`."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import msgspec
import trio

from ...protocol.capabilities import server_capabilities
from ...protocol.card import check_name
from ...protocol.extensions import OLDEST, TASKS, Extension, advertised, check_settings
from ...protocol.limits import Rate, parse_rate
from ...protocol.skills import DIRECTORY_READ, SKILLS_EXTENSION, SkillEntry
from ...telemetry.bus import BusTimer, Publishing, timer
from ...types import Icon, Implementation
from .registrar import Registrar
from .registry import LIST_TOPICS, CardSettings, icons_of, resource_topic
from .skills import Catalog as SkillCatalog
from .skills import load_folder, reader, resources_of


class Server(Registrar):
    """An MCP server: register features with the decorators, then serve it with
    `mcpfast.serve` (HTTP) or `mcpfast.server.serve_stdio` (stdio; from the
    shell, ``mcpfast serve --stdio``).

    Args:
        name: ``serverInfo.name``.
        version: ``serverInfo.version``.
        instructions: guidance for the model, sent in ``server/discover`` and ``initialize``.
        page_size: items per page of the list methods.
        cache_ttl_ms: the ``ttlMs`` hint on cacheable 2026-07-28 results.
        cache_scope: ``"public"`` or ``"private"``.
        bus: the `mcpfast.server.state.bus.Bus` the server serves with (a shared one, such
            as `RedisBus`); None: an in-process one, made by the first endpoint that
            serves it (`bus`).
        scopes: OAuth scopes every request needs when the server is protected
            (`Config.auth`); a tool, resource or prompt may need more (their ``scopes=``).
        method_scopes: scopes a JSON-RPC method needs, e.g. ``{"resources/list": ["files"]}``.
        rate_limit: requests per principal (``"100/min burst=20"``), every method (experimental:
            `server.core.limiter`; ``Config.rate_limit`` wins); a tool's own is its
            ``rate_limit=``.
        method_rate_limits: requests of a method per principal, e.g. ``{"tools/list": "10/s"}``.
        token_verifier: verifies access tokens instead of the one `Config.auth` describes
            (any `mcpfast.server.auth.TokenVerifier`; `Config.auth` still says what the
            metadata document and challenges advertise).
        extensions: extensions to declare, by identifier, with their settings (as
            `extension`, which raises ValueError for an invalid one).
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
        bus: Any = None,
        scopes: list[str] | tuple[str, ...] | frozenset[str] = (),
        method_scopes: Mapping[str, list[str] | tuple[str, ...] | frozenset[str]] | None = None,
        rate_limit: str | Rate | None = None,
        method_rate_limits: Mapping[str, str | Rate] | None = None,
        token_verifier: Any = None,
        extensions: Mapping[str, Mapping[str, Any] | None] | None = None,
    ) -> None:
        self.info = Implementation(
            name=name,
            version=version,
            title=title if title is not None else msgspec.UNSET,
            description=description if description is not None else msgspec.UNSET,
            websiteUrl=website_url if website_url is not None else msgspec.UNSET,
            icons=icons_of(icons),
        )
        self.instructions = instructions
        self.page_size = page_size
        self.cache_ttl_ms = cache_ttl_ms
        self.cache_scope = cache_scope
        self.bus: Any = bus
        """The `Bus` setting, then the bus every endpoint of this server serves with: the one
        given, else (None until then) the in-process one the first endpoint made
        (`core.runtime.bound_bus`), or the shared one `serve` set from ``Config.bus``."""
        super().__init__(scopes, method_scopes)
        self.rate_limit = parse_rate(rate_limit) if rate_limit is not None else None
        self.method_rate_limits = {m: parse_rate(r) for m, r in (method_rate_limits or {}).items()}
        self._publishers: list[trio.Nursery] = []
        self.bus_timer: BusTimer | None = None
        """Times the bus's publishes and replays while serving, when metrics are live
        (`mcpfast.telemetry.bus`; decided when serving starts); None: not timed."""
        self.token_verifier = token_verifier
        self.extensions: dict[str, Extension] = {}
        """The extensions declared (`extension`), by identifier; the tasks extension is not
        among them: it is declared while some tool runs as a task (`declared_extensions`)."""
        self.card: CardSettings | None = None
        """The Server Card settings (`publish_card`; experimental); None: no card served."""
        self.skills: SkillCatalog | None = None
        """The skills served (`skills_from`); None: none registered."""
        for identifier, settings in (extensions or {}).items():
            self.extension(identifier, settings)

    # ------------------------------------------------------------------------------ extensions

    def extension(
        self, identifier: str, settings: Mapping[str, Any] | None = None, *, since: str = OLDEST
    ) -> None:
        """Declare an extension (SEP-2133): advertised with ``settings`` (inline under the
        identifier, ``{}`` by default) in ``server/discover`` and in the ``initialize`` result
        (``since``: only from that protocol revision on). Declaring it again replaces its
        settings. A handler asks `Context.supports_extension` whether the client declared it
        too, and falls back to the core protocol when not.

        Raises:
            ValueError: ``identifier`` is not ``{reverse-DNS prefix}/{name}``, or ``settings``
                is not an object.
        """
        checked = check_settings(identifier, settings)
        self.extensions[identifier] = Extension(
            identifier=identifier, settings=checked, since=since
        )

    def publish_card(
        self, name: str | None = None, *, url: str | None = None, description: str | None = None
    ) -> None:
        """Serve a Server Card (SEP-2127; experimental while the SEP is a draft) at
        ``<MCP path>/server-card`` and list it in ``/.well-known/ai-catalog.json`` (HTTP
        engines; `framework.card`). ``name``: the card's reverse-DNS name (default: the
        server's name, when it has that form); ``url``: the endpoint URL it advertises
        (default: ``Config.auth.resource``, else built from the request's ``Host``);
        ``description``: the card's when the server has none (it needs one; else its title or
        name stands in). Call it before serving.

        Raises:
            ValueError: the name is not ``namespace/name`` in reverse-DNS form.
        """
        self.card = CardSettings(
            name=check_name(name if name is not None else self.info.name),
            url=url,
            description=description,
        )

    def declared_extensions(self) -> list[Extension]:
        """Every extension declared, the tasks extension included while a tool runs as a task."""
        if any(t.task_support != "forbidden" for t in self.tools.values()):
            return [TASKS, *self.extensions.values()]
        return list(self.extensions.values())

    def offers_extension(self, identifier: str, version: str) -> bool:
        """Whether this server advertises an extension in ``version``."""
        return identifier in advertised(self.declared_extensions(), version)

    def skills_from(
        self, folder: str | os.PathLike[str], *, directory_read: bool = True
    ) -> list[SkillEntry]:
        """Serve the skills of a folder (SEP-2640): each directory in it holding a ``SKILL.md``
        (whose YAML front matter's ``name`` is the directory's name) is a skill at
        ``skill://<its path below the folder>/SKILL.md``, its files read now and registered as
        resources, and the skills extension is declared (``directoryRead``: whether
        ``resources/directory/read`` is served), in both eras. The limits, what is refused and
        what is served are `framework.skills.load_folder`'s. Returns the entries added.

        Raises:
            ValueError: a skill breaks a rule (`load_folder`) or is already served.
            ImportError: PyYAML is not installed.
            OSError: the folder cannot be read.
        """
        loaded = load_folder(folder)
        if self.skills is None:
            self.skills = SkillCatalog()
        for skill in loaded:
            self.skills.add(skill)
        for file, name, description in resources_of(loaded):
            self.resource(
                file.uri, name=name, description=description, mime_type=file.mime_type, instant=True
            )(reader(file.data))
            entry = self.resources[file.uri]
            entry.definition = msgspec.structs.replace(entry.definition, size=len(file.data))
        previous = self.extensions.get(SKILLS_EXTENSION)
        read = directory_read or bool(previous and previous.settings.get(DIRECTORY_READ))
        self.extension(SKILLS_EXTENSION, {DIRECTORY_READ: True} if read else {})
        return [skill.entry for skill in loaded]

    def capabilities(self, version: str) -> dict[str, Any]:
        """What this server advertises in ``version`` (``initialize`` and ``server/discover``):
        ``logging`` always; ``tools``, ``resources``, ``prompts``, ``completions`` and tasks
        only when it has some registered (tools that run as a task, for tasks), the declared
        ``extensions`` of the revision (`extension`), with ``listChanged`` (and
        ``resources.subscribe``) since its registry may change while it serves. A feature
        registered after a legacy session's ``initialize`` is not advertised to that session
        (its capabilities are fixed), so register everything before serving."""
        return server_capabilities(
            version,
            tools=bool(self.tools),
            resources=bool(self.resources or self.templates),
            prompts=bool(self.prompts),
            completions=bool(self.completers),
            tasks=any(t.task_support != "forbidden" for t in self.tools.values()),
            extensions=self.extensions.values(),
        )

    @contextmanager
    def publishing(self, nursery: trio.Nursery) -> Iterator[None]:
        """While a serving endpoint's background ``nursery`` runs, registry changes are
        published from it (with several endpoints, from the latest still running); the bus is
        timed from now on if metrics are live (`bus_timer`)."""
        self.bus_timer = timer(self.bus)
        self._publishers.append(nursery)
        try:
            yield
        finally:
            self._publishers.remove(nursery)

    def _changed(self, kind: str) -> None:
        """Publish a registry change from the serving endpoint's nursery; from a worker thread
        (a plain ``def`` handler), through the Trio loop that runs it."""
        if not self._publishers:
            return
        publish = functools.partial(
            self._publishers[-1].start_soon,
            self.publish,
            LIST_TOPICS[kind],
            {"method": f"notifications/{kind}/list_changed"},
        )
        try:
            trio.lowlevel.current_task()
        except RuntimeError:  # not in Trio: a worker thread of `trio.to_thread`
            trio.from_thread.run_sync(publish)
            return
        publish()

    async def resource_updated(self, uri: str) -> None:
        """Tell subscribers that a resource changed (``notifications/resources/updated``)."""
        await self.publish(
            resource_topic(uri),
            {"method": "notifications/resources/updated", "params": {"uri": uri}},
        )

    async def publish(self, topic: str, notification: dict[str, Any]) -> str:
        """``bus.publish``, timed when metrics are live (`bus_timer`); returns its event id.
        Before an endpoint serves this server it has no bus and nobody can be listening: the
        notification goes nowhere (and the id is ``""``), as it did to an unserved bus.

        Raises:
            BusUnavailable: a shared bus is away (as `Bus.publish`).
        """
        bus: Publishing | None = self.bus
        if bus is None:
            return ""
        bus_timer = self.bus_timer
        if bus_timer is None:
            return await bus.publish(topic, notification)
        return await bus_timer.publish(bus, topic, notification)
