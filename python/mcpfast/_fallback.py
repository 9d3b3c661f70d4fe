"""What running on the pure-Python codec costs, and how to avoid it, said by the build backend
(``build_backend/mcpfast_build.py``) when it builds a wheel without a Rust toolchain, and at run
time by `mcpfast.codec.BACKEND_REASON`. Imports nothing: the build backend reads this file from
the source tree, where mcpfast's dependencies are not installed."""

COST = (
    "the codec (JSON-RPC framing, header checks, session tokens, the native engine's request "
    "heads) runs in pure Python, 2.7x to 7x slower per call than the Rust extension "
    "(benches/bench_codec.py): up to 20% fewer requests per second on a whole server "
    "(benches/RESULTS.md)"
)
REMEDY = "install a Rust toolchain (https://rustup.rs), then mcpfast again, to build it"
