#!/usr/bin/env bash
# Run the conformance suite's authorization-server scenarios against `mcpfast auth-server`.
#
#   tests/conformance/run_auth_server.sh [RESULTS_DIR]
#
# Starts `mcpfast auth-server` on a free loopback port, registers a public client with RFC 7591
# dynamic registration, and runs `conformance authorization` (both scenarios:
# authorization-server-metadata-endpoint, authorization-code-grant). The code-grant scenario
# prints an authorization URL "for the browser" and waits for the redirect on its callback
# port: this script plays the browser (curl follows the dev server's auto-approving redirect).
#
# The bundle (offline harness, needs Node >= 20) is $MCPFAST_SHARED/conformance, else
# ../shared/conformance next to the repository root. Without it (or without node) the run is
# skipped (exit 0), except under CI=true, where that is an error (exit 1).
#
# Env: RESULTS_DIR (default <repo>/conformance-results), PYTHON (default <repo>/.venv/bin/python),
#      CONFORMANCE_SPEC_VERSION (passed as --spec-version when set), CONFORMANCE_TIMEOUT_S (the
#      whole harness run, default 120).
# Exit: 0 when every check passes, 1 otherwise.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"

# shellcheck source=tests/conformance/bundle.sh
source "$HERE/bundle.sh"

if [ -z "${PYTHON:-}" ]; then
  if [ -x "$REPO/.venv/bin/python" ]; then PYTHON="$REPO/.venv/bin/python"; else PYTHON=python3; fi
fi
RESULTS="${1:-${RESULTS_DIR:-$REPO/conformance-results}}"
mkdir -p "$RESULTS"
RESULTS="$(cd "$RESULTS" && pwd)"

free_port() {
  "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}
AS_PORT="$(free_port)"
CALLBACK_PORT="$(free_port)"
ISSUER="http://127.0.0.1:${AS_PORT}"
SERVER_LOG="$RESULTS/auth-server.log"
LOG="$RESULTS/auth-server-conformance.log"

(
  cd "$REPO" || exit 1
  export PYTHONPATH="$REPO/python${PYTHONPATH:+:$PYTHONPATH}"
  exec "$PYTHON" -m mcpfast auth-server --port "$AS_PORT"
) >"$SERVER_LOG" 2>&1 &
SERVER_PID=$!
HARNESS_PID=""

cleanup() {
  if [ -n "$HARNESS_PID" ] && kill -0 "$HARNESS_PID" 2>/dev/null; then
    kill "$HARNESS_PID" 2>/dev/null
    wait "$HARNESS_PID" 2>/dev/null
  fi
  if kill -0 "$SERVER_PID" 2>/dev/null; then
    kill "$SERVER_PID" 2>/dev/null
    wait "$SERVER_PID" 2>/dev/null
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ready=0
for _ in $(seq 1 100); do
  if ! kill -0 "$SERVER_PID" 2>/dev/null; then
    echo "conformance: mcpfast auth-server exited early; its log ($SERVER_LOG):" >&2
    cat "$SERVER_LOG" >&2
    exit 1
  fi
  code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 \
    "$ISSUER/.well-known/oauth-authorization-server" 2>/dev/null || true)"
  if [ "$code" = "200" ]; then ready=1; break; fi
  sleep 0.2
done
if [ "$ready" != 1 ]; then
  echo "conformance: mcpfast auth-server did not answer at $ISSUER within 20 s; its log:" >&2
  cat "$SERVER_LOG" >&2
  exit 1
fi

# A public client (the harness sends no secret when the server offers "none"), registered
# with a loopback redirect URI: any port matches (RFC 8252), so the callback port does too.
CLIENT_ID="$(curl -s --max-time 5 -X POST "$ISSUER/register" -H 'content-type: application/json' \
  -d '{"client_name":"conformance","redirect_uris":["http://127.0.0.1/callback"],"token_endpoint_auth_method":"none","grant_types":["authorization_code","refresh_token"],"application_type":"native"}' |
  "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["client_id"])')"
if [ -z "$CLIENT_ID" ]; then
  echo "conformance: dynamic client registration at $ISSUER/register failed" >&2
  exit 1
fi

echo "conformance: bundle $BUNDLE"
echo "conformance: mcpfast auth-server $ISSUER (log: $SERVER_LOG), client $CLIENT_ID"
args=(authorization --url "$ISSUER" --client-id "$CLIENT_ID" --port "$CALLBACK_PORT"
  --resource "http://127.0.0.1:8000/mcp" -o "$RESULTS/auth-server")
if [ -n "${CONFORMANCE_SPEC_VERSION:-}" ]; then args+=(--spec-version "$CONFORMANCE_SPEC_VERSION"); fi
echo "=== conformance ${args[*]}"

: >"$LOG"
(timeout "${CONFORMANCE_TIMEOUT_S:-120}" "$CONFORMANCE" "${args[@]}" 2>&1 | sed -u 's/\x1b\[[0-9;]*m//g' >"$LOG"; exit "${PIPESTATUS[0]}") &
HARNESS_PID=$!

# Play the browser: once the harness listens for its callback, open its authorization URL.
for _ in $(seq 1 150); do
  if grep -q "Callback server started" "$LOG" || ! kill -0 "$HARNESS_PID" 2>/dev/null; then break; fi
  sleep 0.2
done
URL="$(grep -m 1 -o "^$ISSUER/authorize?[^ ]*" "$LOG" || true)"
if [ -n "$URL" ]; then
  curl -s -L --max-redirs 1 --max-time 10 -o /dev/null "$URL" ||
    echo "conformance: following the authorization URL failed" >&2
elif kill -0 "$HARNESS_PID" 2>/dev/null; then
  echo "conformance: the harness printed no authorization URL; see $LOG" >&2
fi

wait "$HARNESS_PID"
rc=$?
HARNESS_PID=""
sed -n '/=== SUMMARY ===/,$p' "$LOG"
if [ "$rc" -eq 0 ]; then
  echo "conformance: authorization-server scenarios passed"
else
  echo "conformance: authorization-server scenarios FAILED (exit $rc); full output in $LOG" >&2
  rc=1
fi
exit $rc
