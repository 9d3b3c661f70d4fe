"""MCP payloads as msgspec Structs: request params decoded once, typed; results encoded directly.

Field names follow the wire (camelCase). Structs that go out omit unset fields.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType, field

META_PREFIX = "io.modelcontextprotocol/"
VERSION_KEY = META_PREFIX + "protocolVersion"
CAPABILITIES_KEY = META_PREFIX + "clientCapabilities"
CLIENT_INFO_KEY = META_PREFIX + "clientInfo"
LOG_LEVEL_KEY = META_PREFIX + "logLevel"
SERVER_INFO_KEY = META_PREFIX + "serverInfo"
SUBSCRIPTION_KEY = META_PREFIX + "subscriptionId"
RELATED_TASK_KEY = META_PREFIX + "related-task"
TASKS_EXTENSION = META_PREFIX + "tasks"

LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
LOG_LEVELS: tuple[str, ...] = get_args(LogLevel)
"""The log levels, least severe first (the one list: `LogLevel` is its type)."""


# ------------------------------------------------------------------------------- incoming params


class RequestMeta(Struct, kw_only=True, omit_defaults=True):
    """`params._meta` of a request: the 2026-07-28 keys plus the progress token."""

    protocol_version: Any = field(default=None, name=VERSION_KEY)
    client_capabilities: Any = field(default=None, name=CAPABILITIES_KEY)
    client_info: Any = field(default=None, name=CLIENT_INFO_KEY)
    log_level: Any = field(default=None, name=LOG_LEVEL_KEY)
    progress_token: int | str | None = field(default=None, name="progressToken")


class Params(Struct, kw_only=True):
    """Params every request may carry."""

    meta: RequestMeta | None = field(default=None, name="_meta")


class CallToolParams(Params, kw_only=True):
    name: str
    arguments: Raw = Raw(b"{}")
    inputResponses: dict[str, Any] | None = None
    requestState: str | None = None
    task: dict[str, Any] | None = None


class GetPromptParams(Params, kw_only=True):
    name: str
    arguments: dict[str, Any] | None = None
    inputResponses: dict[str, Any] | None = None
    requestState: str | None = None


class ReadResourceParams(Params, kw_only=True):
    uri: str
    inputResponses: dict[str, Any] | None = None
    requestState: str | None = None


class ListParams(Params, kw_only=True):
    cursor: str | None = None


class CompletionRef(Struct, kw_only=True):
    type: str
    name: str | None = None
    uri: str | None = None


class CompletionArgument(Struct, kw_only=True):
    name: str
    value: str


class CompleteParams(Params, kw_only=True):
    ref: CompletionRef
    argument: CompletionArgument
    context: dict[str, Any] | None = None


class ListenFilter(Struct, kw_only=True, omit_defaults=True):
    toolsListChanged: bool = False
    promptsListChanged: bool = False
    resourcesListChanged: bool = False
    resourceSubscriptions: list[str] | None = None
    taskIds: list[str] | None = None


class ListenParams(Params, kw_only=True):
    notifications: ListenFilter = msgspec.field(default_factory=ListenFilter)


class TaskParams(Params, kw_only=True):
    taskId: str
    inputResponses: dict[str, Any] | None = None


class InitializeParams(Params, kw_only=True):
    protocolVersion: str
    capabilities: dict[str, Any] = msgspec.field(default_factory=dict)
    clientInfo: dict[str, Any] = msgspec.field(default_factory=dict)


class SetLevelParams(Params, kw_only=True):
    level: LogLevel


class UriParams(Params, kw_only=True):
    uri: str


class CancelledParams(Struct, kw_only=True):
    requestId: int | str | None = None
    reason: str | None = None


# ------------------------------------------------------------------------------ outgoing shapes


class Icon(Struct, kw_only=True, omit_defaults=True):
    src: str
    mimeType: str | UnsetType = UNSET
    sizes: list[str] | UnsetType = UNSET
    theme: Literal["light", "dark"] | UnsetType = UNSET


class Annotations(Struct, kw_only=True, omit_defaults=True):
    audience: list[Literal["user", "assistant"]] | UnsetType = UNSET
    priority: float | UnsetType = UNSET
    lastModified: str | UnsetType = UNSET


class ToolAnnotations(Struct, kw_only=True, omit_defaults=True):
    title: str | UnsetType = UNSET
    readOnlyHint: bool | UnsetType = UNSET
    destructiveHint: bool | UnsetType = UNSET
    idempotentHint: bool | UnsetType = UNSET
    openWorldHint: bool | UnsetType = UNSET


class TextContent(Struct, kw_only=True, omit_defaults=True, tag="text", tag_field="type"):
    text: str
    annotations: Annotations | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = field(default=UNSET, name="_meta")


class ImageContent(Struct, kw_only=True, omit_defaults=True, tag="image", tag_field="type"):
    data: str
    mimeType: str
    annotations: Annotations | UnsetType = UNSET


class AudioContent(Struct, kw_only=True, omit_defaults=True, tag="audio", tag_field="type"):
    data: str
    mimeType: str
    annotations: Annotations | UnsetType = UNSET


class ResourceContents(Struct, kw_only=True, omit_defaults=True):
    """A resource's contents: ``text``, or ``blob`` (base64) for binary data."""

    uri: str
    mimeType: str | UnsetType = UNSET
    text: str | UnsetType = UNSET
    blob: str | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = field(default=UNSET, name="_meta")


TextResourceContents = ResourceContents
BlobResourceContents = ResourceContents


class EmbeddedResource(Struct, kw_only=True, omit_defaults=True, tag="resource", tag_field="type"):
    resource: ResourceContents
    annotations: Annotations | UnsetType = UNSET


class ResourceLink(Struct, kw_only=True, omit_defaults=True, tag="resource_link", tag_field="type"):
    uri: str
    name: str
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    mimeType: str | UnsetType = UNSET
    annotations: Annotations | UnsetType = UNSET


Content = TextContent | ImageContent | AudioContent | EmbeddedResource | ResourceLink


class ToolResult(Struct, kw_only=True, omit_defaults=True):
    """A `tools/call` result; return one from a handler to control every field."""

    content: list[Content] = msgspec.field(default_factory=list)
    structuredContent: Any = UNSET
    isError: bool = False
    resultType: str | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = field(default=UNSET, name="_meta")


class PromptMessage(Struct, kw_only=True):
    role: Literal["user", "assistant"]
    content: Content


class PromptArgument(Struct, kw_only=True, omit_defaults=True):
    name: str
    description: str | UnsetType = UNSET
    required: bool = False


class Tool(Struct, kw_only=True, omit_defaults=True):
    name: str
    inputSchema: dict[str, Any]
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    outputSchema: dict[str, Any] | UnsetType = UNSET
    annotations: ToolAnnotations | UnsetType = UNSET
    icons: list[Icon] | UnsetType = UNSET
    execution: dict[str, Any] | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = field(default=UNSET, name="_meta")


class Resource(Struct, kw_only=True, omit_defaults=True):
    uri: str
    name: str
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    mimeType: str | UnsetType = UNSET
    size: int | UnsetType = UNSET
    annotations: Annotations | UnsetType = UNSET
    icons: list[Icon] | UnsetType = UNSET


class ResourceTemplate(Struct, kw_only=True, omit_defaults=True):
    uriTemplate: str
    name: str
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    mimeType: str | UnsetType = UNSET
    annotations: Annotations | UnsetType = UNSET
    icons: list[Icon] | UnsetType = UNSET


class Prompt(Struct, kw_only=True, omit_defaults=True):
    name: str
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    arguments: list[PromptArgument] | UnsetType = UNSET
    icons: list[Icon] | UnsetType = UNSET


class Implementation(Struct, kw_only=True, omit_defaults=True):
    name: str
    version: str
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    websiteUrl: str | UnsetType = UNSET
    icons: list[Icon] | UnsetType = UNSET


def text(value: str) -> TextContent:
    """A text content block."""
    return TextContent(text=value)


# ------------------------------------------------------------------------------- client results


class DiscoverResult(Struct, kw_only=True):
    """``server/discover`` as the client keeps it."""

    supportedVersions: list[str]
    capabilities: dict[str, Any]
    instructions: str | None = None
    serverInfo: dict[str, Any] | None = None
    ttlMs: int = 0
    cacheScope: str = "private"
    meta: dict[str, Any] | None = field(default=None, name="_meta")

    @property
    def server_info(self) -> dict[str, Any]:
        """``_meta`` serverInfo, else the pre-#3002 ``serverInfo`` member, else empty."""
        info = (self.meta or {}).get(SERVER_INFO_KEY) or self.serverInfo
        return info if isinstance(info, dict) else {}


class Contents(Struct, kw_only=True):
    """One item of ``resources/read``: text or a base64 blob."""

    uri: str
    mimeType: str | None = None
    text: str | None = None
    blob: str | None = None
    meta: dict[str, Any] | None = field(default=None, name="_meta")


class ReadResourceResult(Struct, kw_only=True):
    contents: list[Contents]


class GetPromptResult(Struct, kw_only=True):
    messages: list[PromptMessage]
    description: str | None = None


class Completion(Struct, kw_only=True):
    values: list[str]
    total: int | None = None
    hasMore: bool | None = None
