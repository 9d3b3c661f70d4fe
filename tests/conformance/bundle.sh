# Sourced by run.sh and run_client.sh: finds the offline conformance bundle and Node.js.
# Sets CONFORMANCE (the CLI). Without them it skips (exit 0) or, under CI=true, fails (exit 1).
if [ -n "${MCPFAST_SHARED:-}" ]; then
  BUNDLE="$MCPFAST_SHARED/conformance"
else
  BUNDLE="$REPO/../shared/conformance"
fi
if [ ! -x "$BUNDLE/conformance" ]; then
  if [ "${CI:-}" = "true" ]; then
    echo "conformance: bundle not found at $BUNDLE (set MCPFAST_SHARED); required under CI=true" >&2
    exit 1
  fi
  echo "conformance: SKIPPED - bundle not found at $BUNDLE (set MCPFAST_SHARED to its parent directory)"
  exit 0
fi
BUNDLE="$(cd "$BUNDLE" && pwd)"
CONFORMANCE="$BUNDLE/conformance"

if ! command -v "${CONFORMANCE_NODE:-node}" >/dev/null 2>&1; then
  if [ "${CI:-}" = "true" ]; then
    echo "conformance: node not found (need Node.js >= 20); required under CI=true" >&2
    exit 1
  fi
  echo "conformance: SKIPPED - node not found (need Node.js >= 20)"
  exit 0
fi

# run_leg TITLE LOG BASELINE SUMMARY_MARK ARGS...: run the conformance CLI with ARGS (plus the
# baseline as --expected-failures when that file exists) into LOG without colour codes, and print
# its summary (from the line matching SUMMARY_MARK). Sets LEG_RC (its exit code), LEG_TOTAL (its
# "Total:" line) and LEG_NOTE (which baseline it used, if any).
run_leg() {
  local title="$1" log="$2" baseline="$3" mark="$4"
  shift 4
  local cmd=("$@")
  LEG_NOTE=""
  if [ -f "$baseline" ]; then
    cmd+=(--expected-failures "$baseline")
    LEG_NOTE=" (baseline: ${baseline#"$REPO"/})"
  fi
  echo
  echo "=== $title: conformance ${cmd[*]}"
  "$CONFORMANCE" "${cmd[@]}" 2>&1 | sed 's/\x1b\[[0-9;]*m//g' >"$log"
  LEG_RC=${PIPESTATUS[0]}
  sed -n "/$mark/,\$p" "$log"
  LEG_TOTAL="$(grep -E '^Total: ' "$log" | tail -n 1)"
  [ -n "$LEG_TOTAL" ] || LEG_TOTAL="Total: (no summary; see $log)"
}
