//! `rmcp-echo PORT`: an MCP server on rmcp (the official Rust SDK) with one tool, `echo`, like
//! benches/servers/mcpfast_echo.py's, for the cross-SDK benchmark (benches/bench_servers.py).
//!
//! Streamable HTTP on http://127.0.0.1:PORT/mcp, axum on a current-thread tokio runtime (one
//! core), JSON answers. rmcp serves 2026-07-28 requests statelessly whatever the config (its
//! `legacy_session_mode` applies to the older revisions only); with it on, 2024-11-05 to
//! 2025-11-25 get `initialize` sessions (`Mcp-Session-Id`, GET streams, DELETE). The
//! `subscriptions/listen` stream of 2026-07-28 is accepted for `tools.listChanged` and held
//! until the client leaves. TCP_NODELAY is set on every connection, as the Python servers do:
//! without it an SSE answer written in several pieces waits ~40 ms for a delayed ACK.

use axum::serve::ListenerExt;
use rmcp::{
    ServerHandler,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{ServerCapabilities, ServerConfig, SubscriptionFilter},
    schemars, tool, tool_handler, tool_router,
    transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    },
};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoRequest {
    text: String,
}

#[derive(Clone)]
struct Echo {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Echo {
    #[tool(description = "Return the text.", annotations(read_only_hint = true))]
    fn echo(&self, Parameters(EchoRequest { text }): Parameters<EchoRequest>) -> String {
        text
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.clone())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(8000);
    let config = StreamableHttpServerConfig::default()
        .with_json_response(true)
        .with_legacy_session_mode(true);
    let service = StreamableHttpService::new(
        || {
            Ok(Echo {
                tool_router: Echo::tool_router(),
            })
        },
        LocalSessionManager::default().into(),
        config,
    );
    let app = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .expect("bind")
        .tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
    axum::serve(listener, app).await.expect("serve");
}
