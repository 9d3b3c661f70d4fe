"""The conformance client: does the job of every non-auth client scenario of the MCP conformance
suite (`/work/shared/conformance/SCENARIOS.md`, bundled harness 0.2.0-alpha.12) through the
public mcpfast client API only.

    python tests/conformance/client.py SERVER_URL

The harness appends the mock server's URL and sets ``MCP_CONFORMANCE_SCENARIO``,
``MCP_CONFORMANCE_PROTOCOL_VERSION`` (the wire of the run) and, for some scenarios,
``MCP_CONFORMANCE_CONTEXT`` (JSON). The era follows the wire: ``modern`` for 2026-07-28,
``legacy`` (initialize handshake at that revision) otherwise, ``auto`` where the scenario tests
version detection. Exit 0 when the scenario's job is done; non-zero when the client refuses
(a skill that fails verification, an authorization response or metadata that fails its
checks) and on any error. ``auth/*`` scenarios connect through an ``httpx2.AsyncClient`` whose
auth is `mcpfast.client.oauth.OAuth` (the redirect is followed without a browser: the
harness's authorization servers approve at once), configured from ``MCP_CONFORMANCE_CONTEXT``.

`tests/conformance/run_client.sh` runs the client suite legs with this program.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

try:
    import mcpfast
except ModuleNotFoundError:  # run from a checkout without PYTHONPATH=python
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
    import mcpfast

import httpx2
import trio

from mcpfast import Client, MCPError, ToolResult
from mcpfast.client.oauth import (
    AuthorizationError,
    ClientCredentials,
    ClientCredentialsGrant,
    DiscoveryError,
    FollowRedirect,
    IdJagGrant,
    JwtBearerGrant,
    OAuth,
    RegistrationError,
    TokenError,
    discover_protected_resource,
)
from mcpfast.versions import is_modern

SKILLS_EXTENSION = "io.modelcontextprotocol/skills"


class Refused(Exception):
    """The client refuses what the server offered (the scenario expects a non-zero exit)."""


def log(*parts: Any) -> None:
    print("[mcpfast-client]", *parts, file=sys.stderr, flush=True)


def wire() -> str:
    return os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION") or "2025-11-25"


def context() -> dict[str, Any]:
    raw = os.environ.get("MCP_CONFORMANCE_CONTEXT")
    if not raw:
        return {}
    loaded = json.loads(raw)
    return loaded if isinstance(loaded, dict) else {}


def connect(url: str, era: str | None = None, **handlers: Any) -> Any:
    """`mcpfast.connect` in the era the run's wire calls for (``era`` overrides)."""
    version = wire()
    if era is None:
        era = "modern" if is_modern(version) else "legacy"
    options: dict[str, Any] = {"era": era, "timeout": 30.0, **handlers}
    if era == "legacy" and not is_modern(version):
        options["legacy_version"] = version
    return mcpfast.connect(url, **options)


def text_of(result: ToolResult) -> str:
    return " ".join(str(getattr(block, "text", "")) for block in result.content)


def check_ok(name: str, result: ToolResult) -> ToolResult:
    if result.isError:
        raise RuntimeError(f"tool {name} failed: {text_of(result)}")
    log(f"{name} ->", text_of(result))
    return result


async def call(client: Client, name: str, arguments: dict[str, Any] | None = None) -> ToolResult:
    """Call a tool; a result with ``isError`` is a failure."""
    return check_ok(name, await client.call_tool(name, arguments or {}))


def sample_value(schema: Any) -> Any:
    """A value of the type a property schema asks for (for tools called with made-up input)."""
    kind = schema.get("type") if isinstance(schema, dict) else None
    return {
        "string": "us-west1",
        "integer": 1,
        "number": 1.5,
        "boolean": True,
        "array": [],
        "object": {},
        "null": None,
    }.get(kind if isinstance(kind, str) else "", "x")


def sample_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    properties = schema.get("properties") or {}
    return {key: sample_value(properties.get(key)) for key in schema.get("required") or []}


# ----------------------------------------------------------------------------- handlers


def elicit_defaults(params: dict[str, Any]) -> dict[str, Any]:
    """Accept a form elicitation, filling every field from its schema ``default`` (SEP-1034)."""
    schema = params.get("requestedSchema") or {}
    content = {
        key: prop["default"]
        for key, prop in (schema.get("properties") or {}).items()
        if isinstance(prop, dict) and "default" in prop
    }
    for key, prop in (schema.get("properties") or {}).items():
        if key not in content and isinstance(prop, dict) and prop.get("type") == "boolean":
            content[key] = True
    return {"action": "accept", "content": content}


def sample(params: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": {"type": "text", "text": "sampled"},
        "model": "mcpfast-conformance",
        "stopReason": "endTurn",
    }


def roots() -> list[dict[str, Any]]:
    return [{"uri": "file:///tmp/mcpfast-conformance", "name": "conformance"}]


ALL_HANDLERS: dict[str, Any] = {
    "on_elicit": elicit_defaults,
    "on_sample": sample,
    "on_roots": roots,
}


# ---------------------------------------------------------------------------- scenarios


async def initialize(url: str) -> None:
    async with connect(url) as client:
        log("initialized:", client.era, client.protocol_version, client.server_info)
        await client.list_tools()


async def tools_call(url: str) -> None:
    async with connect(url) as client:
        tools = {tool.name for tool in await client.list_tools()}
        if "add_numbers" not in tools:
            raise RuntimeError(f"add_numbers not listed: {sorted(tools)}")
        result = await call(client, "add_numbers", {"a": 5, "b": 3})
        if "8" not in text_of(result):
            raise RuntimeError(f"unexpected sum: {text_of(result)}")


async def elicitation_defaults(url: str) -> None:
    async with connect(url, on_elicit=elicit_defaults) as client:
        await client.list_tools()
        await call(client, "test_client_elicitation_defaults")


async def sse_retry(url: str) -> None:
    async with connect(url) as client:
        await client.list_tools()
        await call(client, "test_reconnection")


async def request_metadata(url: str) -> None:
    # The scenario rejects the first request with -32022 and the versions it supports: era
    # detection retries with one of them.
    async with connect(url, era="auto", **ALL_HANDLERS) as client:
        log("era:", client.era, client.protocol_version)
        if client.era != "modern":
            raise RuntimeError(f"expected the modern era, got {client.era}")
        await client.list_tools()


async def mrtr_request_state(url: str) -> None:
    async with connect(url, **ALL_HANDLERS) as client:
        await client.list_tools()
        results: dict[str, ToolResult] = {}

        async def one(name: str) -> None:
            results[name] = await call(client, name)

        # The unrelated call runs while the two multi-round-trip calls are in their rounds.
        async with trio.open_nursery() as nursery:
            for name in ("test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_unrelated"):
                nursery.start_soon(one, name)
        await one("test_mrtr_no_result_type")


async def standard_headers(url: str) -> None:
    async with connect(url) as client:
        for tool in await client.list_tools():
            await call(client, tool.name, sample_arguments(tool.inputSchema))
        for resource in await client.list_resources():
            await client.read_resource(resource.uri)
        for prompt in await client.list_prompts():
            await client.get_prompt(prompt.name)


async def custom_headers(url: str) -> None:
    calls = context().get("toolCalls") or []
    if not calls:
        raise RuntimeError("MCP_CONFORMANCE_CONTEXT has no toolCalls")
    async with connect(url) as client:
        await client.list_tools()  # learns the x-mcp-header declarations
        for tool_call in calls:
            await call(client, tool_call["name"], tool_call.get("arguments"))


async def invalid_tool_headers(url: str) -> None:
    async with connect(url) as client:
        tools = await client.list_tools()
        for name, why in sorted(client.dropped_tools.items()):
            log(f"rejected tool {name}: {why}")
        if not tools:
            raise RuntimeError("every tool was rejected")
        for tool in tools:
            await call(client, tool.name, sample_arguments(tool.inputSchema))


async def ref_no_deref(url: str) -> None:
    async with connect(url) as client:
        for tool in await client.list_tools():
            log(f"tool {tool.name}: {json.dumps(tool.inputSchema)}")


async def schema_preservation(url: str) -> None:
    async with connect(url) as client:
        tools = {tool.name: tool for tool in await client.list_tools()}
        focal = tools.get("json_schema_2020_12_tool")
        if focal is None:
            raise RuntimeError(f"json_schema_2020_12_tool not listed: {sorted(tools)}")
        await call(client, "json_schema_echo", {"schema": focal.inputSchema})


# ------------------------------------------------------------------------------ auth/*

CIMD_URL = "https://conformance-test.local/client-metadata.json"
"""The client id metadata document URL the harness expects (it does not fetch it)."""


async def harness_issuer(url: str, data: dict[str, Any]) -> str:
    """The authorization server the scenario's credentials are for: the context's ``issuer``,
    else the one its MCP server's protected resource metadata names (the harness issued the
    credentials and runs both: its word is the user's here)."""
    if isinstance(data.get("issuer"), str):
        return str(data["issuer"])
    async with httpx2.AsyncClient(timeout=30.0) as http:
        return (await discover_protected_resource(http, url)).authorization_servers[0]


async def oauth_for(scenario: str, data: dict[str, Any], url: str) -> OAuth:
    """The `OAuth` a scenario calls for: pre-registered credentials and grants from its
    context, bound to their authorization server (`harness_issuer`), otherwise the
    authorization code flow (CIMD where offered, else DCR)."""
    options: dict[str, Any] = {
        "redirect_handler": FollowRedirect(),
        "redirect_uri": "http://localhost:3000/callback",
        "client_metadata_url": CIMD_URL,
        "dpop": True,
    }
    name = scenario.removeprefix("auth/")
    if name == "pre-registration":
        options["client"] = ClientCredentials(
            data["client_id"],
            client_secret=data["client_secret"],
            issuer=await harness_issuer(url, data),
        )
    elif name == "client-credentials-basic":
        options["client"] = ClientCredentials(
            data["client_id"],
            client_secret=data["client_secret"],
            issuer=await harness_issuer(url, data),
        )
        options["grant"] = ClientCredentialsGrant()
    elif name == "client-credentials-jwt":
        options["client"] = ClientCredentials(
            data["client_id"],
            private_key=data["private_key_pem"],
            signing_algorithm=data.get("signing_algorithm") or "ES256",
            issuer=await harness_issuer(url, data),
        )
        options["grant"] = ClientCredentialsGrant()
    elif name == "wif-jwt-bearer":
        options["client"] = ClientCredentials(data["client_id"], token_endpoint_auth_method="none")
        options["grant"] = JwtBearerGrant(data["valid_jwt"], issuer=await harness_issuer(url, data))
    elif name == "enterprise-managed-authorization":
        options["client"] = ClientCredentials(
            data["client_id"],
            client_secret=data["client_secret"],
            issuer=await harness_issuer(url, data),
        )
        options["grant"] = IdJagGrant(
            idp_token_endpoint=data["idp_token_endpoint"],
            id_token=data["idp_id_token"],
            idp_client_id=data.get("idp_client_id"),
        )
    return OAuth(**options)


async def authorized(url: str) -> None:
    """Every ``auth/*`` scenario: connect with OAuth, list the tools and call each (the
    step-up scenarios challenge ``tools/call`` for more scope)."""
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    auth = await oauth_for(scenario, context(), url)
    async with httpx2.AsyncClient(auth=auth, timeout=30.0) as http:
        async with connect(url, http_client=http) as client:
            tools = await client.list_tools()
            for tool in tools:
                await call(client, tool.name, sample_arguments(tool.inputSchema))
            log(f"authorized: {auth.authorizations} authorization(s)")


# -------------------------------------------------------------------- skills (SEP-2640)


def frontmatter(text: str) -> dict[str, str]:
    """The YAML frontmatter of a SKILL.md (flat ``key: value`` lines).

    Raises:
        Refused: the file has no frontmatter block.
    """
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise Refused("SKILL.md has no frontmatter")
    fields: dict[str, str] = {}
    for line in lines[1:]:
        if line.strip() == "---":
            return fields
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, value = line.partition(":")
        if not sep:
            raise Refused(f"SKILL.md frontmatter line is not 'key: value': {line!r}")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        fields[key.strip()] = value
    raise Refused("SKILL.md frontmatter is not closed")


async def read_verified(client: Client, entry: dict[str, Any]) -> str:
    """Read one file of a skill and verify its size and digest against the entry.

    Raises:
        Refused: the content does not match the entry.
    """
    uri = entry["uri"]
    contents = (await client.read_resource(uri)).contents
    if len(contents) != 1:
        raise Refused(f"{uri}: expected one content block, got {len(contents)}")
    text = getattr(contents[0], "text", None)
    if not isinstance(text, str):
        raise Refused(f"{uri}: not a text resource")
    data = text.encode("utf-8")
    if "size" in entry and len(data) != entry["size"]:
        raise Refused(f"{uri}: {len(data)} bytes, the entry says {entry['size']}")
    algorithm, _, expected = str(entry.get("digest", "")).partition(":")
    if algorithm != "sha256" or not expected:
        raise Refused(f"{uri}: no sha256 digest in the entry ({entry.get('digest')!r})")
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected.lower():
        raise Refused(f"{uri}: digest sha256:{actual}, the entry says {entry['digest']}")
    return text


async def load_skill(client: Client, skill: dict[str, Any]) -> None:
    """Load a skill: its SKILL.md first (verified, frontmatter compared), then its other files.

    Raises:
        Refused: a file fails verification (nothing after it is read).
    """
    files = [f for f in skill.get("resources") or [] if isinstance(f, dict) and "uri" in f]
    manifest = next((f for f in files if f["uri"] == skill["uri"]), None)
    if manifest is None:
        raise Refused(f"{skill['uri']}: the skill's own SKILL.md is not among its resources")
    found = frontmatter(await read_verified(client, manifest))
    for key, value in (skill.get("frontmatter") or {}).items():
        if found.get(key) != str(value):
            raise Refused(
                f"{skill['uri']}: {key!r} is {found.get(key)!r} in SKILL.md, {value!r} in the entry"
            )
    for extra in sorted(set(found) - set(skill.get("frontmatter") or {})):
        raise Refused(f"{skill['uri']}: frontmatter field {extra!r} is not in the entry")
    for entry in files:
        if entry is not manifest:
            await read_verified(client, entry)
    log(f"loaded skill {skill['uri']} ({len(files)} files verified)")


async def skills(url: str, *, load: bool) -> None:
    async with connect(url) as client:
        extensions = client.server_capabilities.get("extensions") or {}
        if SKILLS_EXTENSION not in extensions:
            raise RuntimeError(f"the server does not offer {SKILLS_EXTENSION}")
        listed = (await client.request("skills/list")).get("skills") or []
        log("skills:", [skill.get("uri") for skill in listed])
        if load:  # the host decides to use the (first) skill now
            for skill in listed[:1]:
                await load_skill(client, skill)


# ------------------------------------------------------------------------------- main

Scenario = Callable[[str], Awaitable[None]]


async def no_prefetch(url: str) -> None:
    await skills(url, load=False)


async def verify_skill(url: str) -> None:
    await skills(url, load=True)


SCENARIOS: dict[str, Scenario] = {
    "initialize": initialize,
    "tools_call": tools_call,
    "elicitation-sep1034-client-defaults": elicitation_defaults,
    "sse-retry": sse_retry,
    "request-metadata": request_metadata,
    "sep-2322-client-request-state": mrtr_request_state,
    "http-standard-headers": standard_headers,
    "http-custom-headers": custom_headers,
    "http-invalid-tool-headers": invalid_tool_headers,
    "json-schema-ref-no-deref": ref_no_deref,
    "json-schema-2020-12-preservation": schema_preservation,
    "sep-2640-client-no-prefetch": no_prefetch,
    "sep-2640-client-verify-digest": verify_skill,
    "sep-2640-client-verify-size": verify_skill,
    "sep-2640-client-verify-frontmatter": verify_skill,
}


def main(argv: list[str]) -> int:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    if len(argv) < 2:
        print(f"usage: {argv[0]} SERVER_URL  (with MCP_CONFORMANCE_SCENARIO set)", file=sys.stderr)
        return 2
    url = argv[-1]
    run = authorized if scenario.startswith("auth/") else SCENARIOS.get(scenario)
    if run is None:
        print(f"unknown scenario {scenario!r}", file=sys.stderr)
        return 2
    log(f"scenario {scenario} at {wire()} against {url}")
    try:
        trio.run(run, url)
    except Exception as exc:  # every failure is reported and exits non-zero
        errors = leaves(exc)
        refused = [e for e in errors if isinstance(e, Refused)]
        for error in refused or errors:
            verdict = "refused" if refused else "failed"
            why = "no answer in time" if isinstance(error, trio.TooSlowError) else error
            print(f"{scenario}: {verdict}: {type(error).__name__}: {why}", file=sys.stderr)
            if not refused and not isinstance(error, EXPECTED):
                traceback.print_exception(error)
        return 1
    log(f"scenario {scenario}: done")
    return 0


EXPECTED = (
    MCPError,
    mcpfast.TransportError,
    RuntimeError,
    trio.TooSlowError,
    AuthorizationError,
    DiscoveryError,
    RegistrationError,
    TokenError,
)


def leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups; nurseries wrap what a body raises."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]


if __name__ == "__main__":
    sys.exit(main(sys.argv))
