#!/usr/bin/env bash
# Run the official MCP conformance suite (client side) with tests/conformance/client.py as the client.
#
#   tests/conformance/run_client.sh [RESULTS_DIR]
#
# Legs (the harness starts one mock server per scenario and runs the client against it):
#   2025-11-25   --suite all --spec-version 2025-11-25   (initialize handshake)
#   2026-07-28   --suite all --spec-version 2026-07-28   (stateless wire)
#   extensions   --suite all                             (every scenario at its default wire; the only
#                                                         leg that reaches the sep-2640-client-* ones)
# A leg uses tests/conformance/expected-failures-client-<leg>.yml as its baseline when that file
# exists; the baselines are empty (every scenario, auth/* included, passes): a new failure fails.
#
# The bundle (offline harness, needs Node >= 20) is $MCPFAST_SHARED/conformance, else
# ../shared/conformance next to the repository root. Without it the run is skipped (exit 0),
# except under CI=true, where a missing bundle is an error (exit 1).
#
# Env: RESULTS_DIR (default <repo>/conformance-results), CONFORMANCE_TIMEOUT_MS (per scenario,
#      default 60000; a suite runs its scenarios in parallel), PYTHON (default .venv/bin/python,
#      else python3), CONFORMANCE_LEGS (space-separated subset of the leg names above).
# Exit: 0 when every leg passes (or matches its baseline), 1 otherwise.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"

# shellcheck source=tests/conformance/bundle.sh
source "$HERE/bundle.sh"

# The harness splits --command on spaces and runs it from the current directory (the repository
# root, below), so the interpreter path is relative when it can be.
if [ -z "${PYTHON:-}" ]; then
  if [ -x "$REPO/.venv/bin/python" ]; then PYTHON=".venv/bin/python"; else PYTHON=python3; fi
fi
CLIENT_CMD="$PYTHON tests/conformance/client.py"
export PYTHONPATH="$REPO/python${PYTHONPATH:+:$PYTHONPATH}"

RESULTS="${1:-${RESULTS_DIR:-$REPO/conformance-results}}"
mkdir -p "$RESULTS"
RESULTS="$(cd "$RESULTS" && pwd)"
TIMEOUT_MS="${CONFORMANCE_TIMEOUT_MS:-60000}"

echo "conformance: bundle $BUNDLE"
echo "conformance: client command '$CLIENT_CMD' (cwd $REPO)"
echo "conformance: results in $RESULTS"

leg_args() {
  case "$1" in
    2025-11-25|2026-07-28) echo "--suite all --spec-version $1" ;;
    extensions) echo "--suite all" ;;
    *) return 1 ;;
  esac
}

cd "$REPO" || exit 1
LEGS="${CONFORMANCE_LEGS:-2025-11-25 2026-07-28 extensions}"
rc=0
summary=()
for leg in $LEGS; do
  if ! args="$(leg_args "$leg")"; then
    echo "conformance: unknown leg '$leg'" >&2
    rc=1
    continue
  fi
  log="$RESULTS/client-$leg.log"
  # shellcheck disable=SC2086 # the leg arguments are plain words
  run_leg "client leg $leg" "$log" "$HERE/expected-failures-client-$leg.yml" \
    '=== SUITE SUMMARY ===' \
    client --command "$CLIENT_CMD" $args --timeout "$TIMEOUT_MS" -o "$RESULTS/client-$leg"
  # Scenario lines of the suite summary: "✓ name: ..." (no failure, no warning) or "✗ name: ...".
  clean="$(grep -cE '^✓ ' "$log")"
  run="$(grep -cE '^[✓✗] ' "$log")"
  own_clean="$(grep -E '^✓ ' "$log" | grep -cv '^✓ auth/')"
  own_run="$(grep -E '^[✓✗] ' "$log" | grep -cvE '^[✓✗] auth/')"
  if [ "$LEG_RC" -eq 0 ]; then status="ok"; else status="FAILED (exit $LEG_RC)"; rc=1; fi
  summary+=("$(printf '%-11s %s; scenarios clean %s/%s (non-auth %s/%s)  %s%s' \
    "$leg" "$LEG_TOTAL" "$clean" "$run" "$own_clean" "$own_run" "$status" "$LEG_NOTE")")
done

echo
echo "=== client conformance summary (checks per leg; full output in $RESULTS)"
for line in "${summary[@]}"; do echo "$line"; done
exit $rc
