"""The sans-IO core: every rule of MCP on the wire, as pure functions and small objects that the
server, the client, the load tester and the tests share. Nothing here imports trio, httpx2,
hypercorn or socket (`tests/test_layers.py` holds that).

Where each rule lives, in the order a request meets them:

========================================  ====================================================
rule                                      home
========================================  ====================================================
JSON-RPC framing: one message or a        `mcpfast.codec` ``frame`` (Rust, with the Python
batch, nesting limit, what each           twin `mcpfast._codec_py` as its specification):
message is, its routed name and           typed `Message` objects
``_meta`` version
Host/Origin guard, Accept ranking, SSE    `http`
response headers, media types
which era a POST or a stdio line is;      `routing`
which route serves an HTTP path (the MCP
path, metadata, probes, cards; else 404)
method facts: params Struct, eras,        `methods` (the one table; Rust's routing table is
``Mcp-Name`` member, instant, cacheable,  checked against it by ``tests/test_methods.py``)
list key, capability, list it changes
revisions, negotiation, what each         `mcpfast.versions` (one named predicate per
revision has (batching, elicitation       question: ``is_modern``, ``has_polling``,
modes, polling, tasks...)                 ``has_legacy_tasks``...; no revision literal
                                          elsewhere)
2026-07-28 checks and their order         `modern.check`
(version header, version served,
``_meta``, mirrored headers, method,
params, log level)
request ``_meta`` (client side)           `modern.request_meta`
the retry that answers                    `modern.retry_params`, `modern.check_result_type`
``input_required``; the ``resultType``
values a request allows
``Mcp-Name``/``Mcp-Param-*`` headers:     `headers` (``request_headers``, ``header_params``);
what a client sends, what a tool          the server's check is the codec's ``check_headers``
declares; the server's check
capabilities, both sides, by revision;    `capabilities`
what a server-to-client request needs
``initialize``: params, result, reading   `initialize`
the answer
the client's legacy session: id,          `session` (``ClientSession``, ``ResumePoint``)
re-mint, re-initialize on 404, resume
point
reconnecting a long-lived stream:         `backoff`
capped exponential backoff, full
jitter, ``Retry-After``, which answers
are worth another attempt
request/answer id correlation,            `correlation`
cancellation params
a refusal "not now" (429, a 503 with      `retries`
``Retry-After``, -32023): reading it,
which requests are safe to repeat, the
bounded jittered waits of the client
client era detection (seed 002) and its   `discovery`
cache
the resource server's authorization:      `auth` (the verification itself, with keys and
``Authorization`` header, scopes and      HTTP, is `mcpfast.server.auth`)
their hierarchy, ``WWW-Authenticate``
challenges, RFC 9728 metadata and its
well-known paths, DPoP ``htu`` matching
a DPoP proof's header and claims          `dpop` (signatures, nonces and replay:
                                          `mcpfast.server.auth.dpop`)
what a server's result carries per        `results`
revision: ``resultType``, the server's
``_meta``, ``input_required``, cache
hints, fields a revision lacks, the
error codes a legacy revision has
tasks on the wire in both task            `tasks` (where a task is kept:
revisions (``ttlMs``/``ttl``, created,    `mcpfast.server.state.task_records`; where it
``tasks/get``, ``tasks/result``)          runs: `mcpfast.server.core.tasks`)
Server-Sent Events                        `sse`
HTTP/1.1 for the native engine            `http11`
========================================  ====================================================

Rules that need a key or a clock stay with their side: signed session ids and their lifetimes
(`mcpfast.server.state.sessions`), ``requestState`` binding and size
(`mcpfast.server.state.request_state`), the client's response cache by ``ttlMs``
(`mcpfast.client.cache`). The server serves each method with one feature for both eras
(`mcpfast.server.core.dispatch`, over `mcpfast.server.framework.features`).
"""
