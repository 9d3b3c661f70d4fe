#!/usr/bin/env bash
# Run the official MCP conformance suite (server side) against tests/conformance/server.py.
#
#   tests/conformance/run.sh [RESULTS_DIR]
#
# Legs (each against one server process, one after the other):
#   2026-07-28   --suite all --spec-version 2026-07-28   (stateless wire)
#   2025-11-25   --suite all --spec-version 2025-11-25
#   2025-06-18   --suite all --spec-version 2025-06-18
#   2025-03-26   --suite all --spec-version 2025-03-26
#   extensions   --suite all                             (every scenario at its default wire,
#                                                         the only leg that reaches tasks-*)
#   skills       --scenario sep-2640-skills-{enumeration,directory,manifest}, each at its
#                default wire (2026-07-28) and at 2025-11-25 (--force): the Skills extension
#                (SEP-2640), pending scenarios the suites leave out, run by name
# A leg uses tests/conformance/expected-failures-<leg>.yml as its baseline when that file exists.
#
# The bundle (offline harness, needs Node >= 20) is $MCPFAST_SHARED/conformance, else
# ../shared/conformance next to the repository root. Without it the run is skipped (exit 0),
# except under CI=true, where a missing bundle is an error (exit 1).
#
# Env: RESULTS_DIR (default <repo>/conformance-results), CONFORMANCE_TIMEOUT_MS (per scenario,
#      default 30000), PYTHON (default <repo>/.venv/bin/python, else python3),
#      CONFORMANCE_LEGS (space-separated subset of the leg names above), CONFORMANCE_PORT (the
#      server's port; default a free one), CONFORMANCE_URL (run the legs against this endpoint,
#      which the caller serves, instead of starting a server: run_scale_out.sh does).
# Exit: 0 when every leg passes (or matches its baseline), 1 otherwise.
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
TIMEOUT_MS="${CONFORMANCE_TIMEOUT_MS:-30000}"

STATE_DIR="$(mktemp -d "${TMPDIR:-/tmp}/mcpfast-conformance-state.XXXXXX")"
cleanup() {
  if [ -n "${SERVER_PID:-}" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill "$SERVER_PID" 2>/dev/null
    wait "$SERVER_PID" 2>/dev/null
  fi
  rm -rf "$STATE_DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# server_alive: whether the server still runs (one the caller serves is its own to watch).
server_alive() { [ -z "${SERVER_PID:-}" ] || kill -0 "$SERVER_PID" 2>/dev/null; }

if [ -n "${CONFORMANCE_URL:-}" ]; then
  URL="$CONFORMANCE_URL"
  SERVER_LOG="(served by the caller)"
else
  PORT="${CONFORMANCE_PORT:-$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')}"
  URL="http://127.0.0.1:${PORT}/mcp"
  SERVER_LOG="$RESULTS/server.log"
  (
    cd "$REPO" || exit 1
    export PYTHONPATH="$REPO/python${PYTHONPATH:+:$PYTHONPATH}"
    export MCPFAST_STATE_DIR="${MCPFAST_STATE_DIR:-$STATE_DIR}"
    exec "$PYTHON" "$HERE/server.py" "$PORT"
  ) >"$SERVER_LOG" 2>&1 &
  SERVER_PID=$!
fi

# Any HTTP answer (even 4xx/405) means the server listens.
ready=0
for _ in $(seq 1 100); do
  if ! server_alive; then
    echo "conformance: the server exited early; its log ($SERVER_LOG):" >&2
    cat "$SERVER_LOG" >&2
    exit 1
  fi
  code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$URL" 2>/dev/null || true)"
  if [ -n "$code" ] && [ "$code" != "000" ]; then ready=1; break; fi
  sleep 0.2
done
if [ "$ready" != 1 ]; then
  echo "conformance: the server did not answer at $URL within 20 s; its log ($SERVER_LOG):" >&2
  [ -z "${SERVER_PID:-}" ] || cat "$SERVER_LOG" >&2
  exit 1
fi

echo "conformance: bundle $BUNDLE"
echo "conformance: server $URL (log: $SERVER_LOG)"
echo "conformance: results in $RESULTS"

SKILLS_SCENARIOS="sep-2640-skills-enumeration sep-2640-skills-directory sep-2640-skills-manifest"

# run_skills_leg: the skills leg, one conformance run per scenario and wire; sets LEG_RC (the
# first failure's exit code, else 0), LEG_TOTAL (checks passed / failed over all runs), LEG_NOTE.
run_skills_leg() {
  local rc=0 passed=0 failed=0 scenario wire extra
  for scenario in $SKILLS_SCENARIOS; do
    for wire in default 2025-11-25; do
      extra=()
      [ "$wire" = default ] || extra=(--spec-version "$wire" --force)
      run_leg "leg skills: $scenario ($wire)" "$RESULTS/skills-$scenario-$wire.log" \
        "$HERE/expected-failures-skills.yml" 'Test Results' \
        server --url "$URL" --scenario "$scenario" "${extra[@]}" --timeout "$TIMEOUT_MS"
      [ "$LEG_RC" -eq 0 ] || [ "$rc" -ne 0 ] || rc=$LEG_RC
      read -r p f < <(sed -n 's/^Passed: \([0-9]*\)\/[0-9]*, \([0-9]*\) failed.*/\1 \2/p' \
        "$RESULTS/skills-$scenario-$wire.log" | tail -n 1)
      passed=$((passed + ${p:-0}))
      failed=$((failed + ${f:-1}))
    done
  done
  LEG_RC=$rc
  LEG_NOTE=""
  LEG_TOTAL="Total: $passed passed, $failed failed"
}

leg_args() {
  case "$1" in
    2026-07-28|2025-11-25|2025-06-18|2025-03-26) echo "--suite all --spec-version $1" ;;
    extensions) echo "--suite all" ;;
    *) return 1 ;;
  esac
}

LEGS="${CONFORMANCE_LEGS:-2026-07-28 2025-11-25 2025-06-18 2025-03-26 extensions skills}"
rc=0
summary=()
for leg in $LEGS; do
  if [ "$leg" = skills ]; then
    run_skills_leg
  elif ! args="$(leg_args "$leg")"; then
    echo "conformance: unknown leg '$leg'" >&2
    rc=1
    continue
  else
    # shellcheck disable=SC2086 # the leg arguments are plain words
    run_leg "leg $leg" "$RESULTS/$leg.log" "$HERE/expected-failures-$leg.yml" '=== SUMMARY ===' \
      server --url "$URL" $args --timeout "$TIMEOUT_MS" -o "$RESULTS/$leg"
  fi
  if [ "$LEG_RC" -eq 0 ]; then status="ok"; else status="FAILED (exit $LEG_RC)"; rc=1; fi
  summary+=("$(printf '%-11s %s  %s%s' "$leg" "$LEG_TOTAL" "$status" "$LEG_NOTE")")
  if ! server_alive; then
    echo "conformance: the server died during leg $leg; see $SERVER_LOG" >&2
    rc=1
    break
  fi
done

echo
echo "=== conformance summary (checks per leg; full output in $RESULTS)"
for line in "${summary[@]}"; do echo "$line"; done
exit $rc
