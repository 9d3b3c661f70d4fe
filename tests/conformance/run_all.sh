#!/usr/bin/env bash
# Run every conformance script `make test` runs, side by side (each has its own server, port and
# results directory), and print each one's output whole, in a fixed order, once all are done:
#
#   server legs, hypercorn engine   tests/conformance/run.sh          -> $RESULTS_DIR (conformance-results)
#   server legs, native engine      MCPFAST_ENGINE=native run.sh      -> conformance-results/native
#   client legs                     tests/conformance/run_client.sh   -> $RESULTS_DIR (conformance-results)
#   authorization-server scenarios  tests/conformance/run_auth_server.sh
#   server legs, scaled out         tests/conformance/run_scale_out.sh -> conformance-results/scale-out
#                                   (two processes on one Redis behind a round-robin proxy)
#
# Env: CONFORMANCE_SERIAL=1 runs them one after the other instead (output as it comes).
# A leg that cannot run here (no bundle, no Node.js, no redis-server) is reported `skipped (why)`,
# not `ok`; under CI=true it fails instead (skip.sh).
# Exit: 0 when none fails, 1 otherwise (the last lines say which failed).
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
NAMES=("server legs (hypercorn)" "server legs (native)" "client legs" "authorization-server scenarios (mcpfast auth-server)" "server legs (two processes on Redis behind a round-robin proxy)")

if [ -z "${PYTHON:-}" ]; then
  if [ -x "$REPO/.venv/bin/python" ]; then PYTHON="$REPO/.venv/bin/python"; else PYTHON=python3; fi
fi
# Two distinct free ports for the two servers (side by side they must not pick the same one).
read -r PORT0 PORT1 < <("$PYTHON" -c '
import socket
a, b = socket.socket(), socket.socket()
a.bind(("127.0.0.1", 0)); b.bind(("127.0.0.1", 0))
print(a.getsockname()[1], b.getsockname()[1])')

SKIPS="$(mktemp -d "${TMPDIR:-/tmp}/mcpfast-conformance-skips.XXXXXX")"
# run_one I: leg I; a leg that cannot run here writes why to $SKIPS/I (skip.sh).
run_one() {
  export CONFORMANCE_SKIPPED="$SKIPS/$1"
  case "$1" in
    0) CONFORMANCE_PORT="$PORT0" bash "$HERE/run.sh" ;;
    1) MCPFAST_ENGINE=native CONFORMANCE_PORT="$PORT1" RESULTS_DIR="$REPO/conformance-results/native" \
         bash "$HERE/run.sh" ;;
    2) bash "$HERE/run_client.sh" ;;
    3) bash "$HERE/run_auth_server.sh" ;;
    4) RESULTS_DIR="$REPO/conformance-results/scale-out" bash "$HERE/run_scale_out.sh" ;;
  esac
}

start=$(date +%s)
rcs=()
if [ "${CONFORMANCE_SERIAL:-}" = 1 ]; then
  for i in 0 1 2 3 4; do
    echo "=== conformance: ${NAMES[$i]}"
    run_one "$i"
    rcs[i]=$?
  done
else
  LOGS="$(mktemp -d "${TMPDIR:-/tmp}/mcpfast-conformance-logs.XXXXXX")"
  pids=()
  cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$LOGS" "$SKIPS"
  }
  trap cleanup EXIT
  trap 'exit 130' INT TERM
  for i in 0 1 2 3 4; do
    run_one "$i" >"$LOGS/$i.log" 2>&1 &
    pids[i]=$!
  done
  for i in 0 1 2 3 4; do
    wait "${pids[$i]}"
    rcs[i]=$?
  done
  pids=()
  for i in 0 1 2 3 4; do
    echo
    echo "=================== conformance: ${NAMES[$i]} (exit ${rcs[$i]})"
    cat "$LOGS/$i.log"
  done
fi

rc=0
echo
for i in 0 1 2 3 4; do
  if [ "${rcs[$i]}" -eq 0 ] && [ -s "$SKIPS/$i" ]; then
    echo "conformance: ${NAMES[$i]}: skipped ($(head -n 1 "$SKIPS/$i"))"
  elif [ "${rcs[$i]}" -eq 0 ]; then
    echo "conformance: ${NAMES[$i]}: ok"
  else
    echo "conformance: ${NAMES[$i]}: FAILED (exit ${rcs[$i]})"
    rc=1
  fi
done
echo "conformance: done in $(( $(date +%s) - start ))s"
rm -rf "$SKIPS"
exit $rc
