//! `axum-echo PORT`: the plain HTTP baseline a load generator must outrun
//! (loadtests/bench_fast.py). Axum on a current-thread tokio runtime: every POST is answered
//! with a fixed 2026-07-28 JSON-RPC result chosen by a substring of the body (`server/discover`,
//! `tools/list`, else a `tools/call` result), its id copied from the request; no JSON parsing,
//! no MCP checks: the ceiling of one core, not an MCP server.

use axum::{body::Bytes, http::header, routing::post, Router};

const DISCOVER: &str = r#"{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"serverInfo":{"name":"axum-echo","version":"0.1.0"},"resultType":"complete"}"#;
const TOOLS: &str = r#"{"tools":[{"name":"echo","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]},"annotations":{"readOnlyHint":true}}],"resultType":"complete"}"#;
const CALL: &str =
    r#"{"content":[{"type":"text","text":"hi"}],"isError":false,"resultType":"complete"}"#;

/// The raw `"id"` value of a JSON-RPC request body (`null` when absent).
fn id_of(body: &str) -> &str {
    body.find("\"id\":").map_or("null", |at| {
        let rest = body[at + 5..].trim_start();
        let end = rest.find([',', '}']).unwrap_or(rest.len());
        rest[..end].trim_end()
    })
}

async fn answer(body: Bytes) -> ([(header::HeaderName, &'static str); 1], String) {
    let text = std::str::from_utf8(&body).unwrap_or("");
    let result = if text.contains("\"server/discover\"") {
        DISCOVER
    } else if text.contains("\"tools/list\"") {
        TOOLS
    } else {
        CALL
    };
    let reply = format!(r#"{{"jsonrpc":"2.0","id":{},"result":{result}}}"#, id_of(text));
    ([(header::CONTENT_TYPE, "application/json")], reply)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(8000);
    let app = Router::new().route("/mcp", post(answer));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .expect("bind");
    axum::serve(listener, app).await.expect("serve");
}
