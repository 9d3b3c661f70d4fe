#!/usr/bin/env bash
# The conformance server legs (run.sh) against two server processes sharing one Redis, behind
# the round-robin proxy of the tests (tests/e2e/round_robin.py: each request goes to the other
# process). They must pass as they do on one server (same legs, same baselines).
#
#   tests/conformance/run_scale_out.sh [RESULTS_DIR]
#
# Starts redis-server on a free port (no persistence; $MCPFAST_REDIS_SERVER or redis-server on
# PATH), `mcpfast serve tests/conformance/server.py:server --bus redis://127.0.0.1:P/0` twice
# (same signing keys, engine $MCPFAST_ENGINE, default hypercorn) and the proxy, runs run.sh with
# CONFORMANCE_URL set to the proxy, and stops all of them at the end. Without redis-server it is
# skipped (exit 0), except under CI=true (exit 1).
#
# Env: RESULTS_DIR (default <repo>/conformance-results/scale-out), and those of run.sh
#      (CONFORMANCE_LEGS, CONFORMANCE_TIMEOUT_MS, PYTHON).
# Exit: run.sh's (0 when every leg passes or matches its baseline), 1 when the set-up fails.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"

if [ -z "${PYTHON:-}" ]; then
  if [ -x "$REPO/.venv/bin/python" ]; then PYTHON="$REPO/.venv/bin/python"; else PYTHON=python3; fi
fi
REDIS="${MCPFAST_REDIS_SERVER:-$(command -v redis-server || true)}"
# shellcheck source=tests/conformance/skip.sh
source "$HERE/skip.sh"
if [ -z "$REDIS" ]; then
  skip_leg "redis-server not found (set MCPFAST_REDIS_SERVER)"
fi

RESULTS="${1:-${RESULTS_DIR:-$REPO/conformance-results/scale-out}}"
mkdir -p "$RESULTS"
RESULTS="$(cd "$RESULTS" && pwd)"
ENGINE="${MCPFAST_ENGINE:-hypercorn}"

# Four distinct free ports: Redis, two servers, the proxy.
read -r REDIS_PORT PORT_A PORT_B PROXY_PORT < <("$PYTHON" -c '
import socket
socks = [socket.socket() for _ in range(4)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))')
BUS="redis://127.0.0.1:${REDIS_PORT}/0"
STATE_DIR="$(mktemp -d "${TMPDIR:-/tmp}/mcpfast-conformance-scale-out.XXXXXX")"
KEYS="k1:$("$PYTHON" -c 'import base64, os; print(base64.urlsafe_b64encode(os.urandom(32)).decode())')"

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null; done
  rm -rf "$STATE_DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$REDIS" --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --protected-mode no \
  >"$RESULTS/redis.log" 2>&1 &
pids+=($!)

serve() {  # serve PORT LOG: one server process on the bus
  (
    cd "$REPO" || exit 1
    export PYTHONPATH="$REPO/python${PYTHONPATH:+:$PYTHONPATH}"
    export MCPFAST_STATE_DIR="$STATE_DIR" MCPFAST_KEYS="$KEYS"
    exec "$PYTHON" -m mcpfast serve "$HERE/server.py:server" --port "$1" --engine "$ENGINE" \
      --bus "$BUS"
  ) >"$2" 2>&1 &
  pids+=($!)
}

# wait_for PORT LOG: until something answers HTTP on PORT (20 s at most; each process alive).
wait_for() {
  for _ in $(seq 1 100); do
    for pid in "${pids[@]}"; do
      if ! kill -0 "$pid" 2>/dev/null; then
        echo "conformance (scale-out): a process exited early; $2:" >&2
        cat "$2" >&2
        exit 1
      fi
    done
    code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://127.0.0.1:$1/mcp" 2>/dev/null || true)"
    if [ -n "$code" ] && [ "$code" != "000" ]; then return 0; fi
    sleep 0.2
  done
  echo "conformance (scale-out): nothing answered on port $1 within 20 s; $2:" >&2
  cat "$2" >&2
  exit 1
}

for _ in $(seq 1 100); do
  if "$PYTHON" -c "import socket, sys; s = socket.create_connection(('127.0.0.1', $REDIS_PORT), 1); s.sendall(b'PING\r\n'); sys.exit(not s.recv(16).startswith(b'+PONG'))" 2>/dev/null; then
    break
  fi
  sleep 0.1
done
serve "$PORT_A" "$RESULTS/server-a.log"
serve "$PORT_B" "$RESULTS/server-b.log"
wait_for "$PORT_A" "$RESULTS/server-a.log"
wait_for "$PORT_B" "$RESULTS/server-b.log"
"$PYTHON" "$REPO/tests/e2e/round_robin.py" --listen "$PROXY_PORT" \
  "http://127.0.0.1:$PORT_A" "http://127.0.0.1:$PORT_B" >"$RESULTS/proxy.log" 2>&1 &
pids+=($!)
wait_for "$PROXY_PORT" "$RESULTS/proxy.log"

echo "conformance (scale-out): redis $BUS, servers :$PORT_A :$PORT_B ($ENGINE), proxy :$PROXY_PORT"
CONFORMANCE_URL="http://127.0.0.1:$PROXY_PORT/mcp" bash "$HERE/run.sh" "$RESULTS"
rc=$?
for pid in "${pids[@]}"; do
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "conformance (scale-out): a process died during the run; see $RESULTS/*.log" >&2
    rc=1
  fi
done
exit $rc
