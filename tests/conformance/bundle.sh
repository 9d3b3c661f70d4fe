# Sourced by run.sh and run_client.sh: finds the offline conformance bundle and Node.js.
# Sets CONFORMANCE (the CLI). Without them it skips (exit 0) or, under CI=true, fails (exit 1):
# see skip.sh.
# shellcheck source=tests/conformance/skip.sh
source "$HERE/skip.sh"
if [ -n "${MCPFAST_SHARED:-}" ]; then
  BUNDLE="$MCPFAST_SHARED/conformance"
else
  BUNDLE="$REPO/../shared/conformance"
fi
if [ ! -x "$BUNDLE/conformance" ]; then
  skip_leg "bundle not found at $BUNDLE (set MCPFAST_SHARED to its parent directory)"
fi
BUNDLE="$(cd "$BUNDLE" && pwd)"
CONFORMANCE="$BUNDLE/conformance"

if ! command -v "${CONFORMANCE_NODE:-node}" >/dev/null 2>&1; then
  skip_leg "node not found (need Node.js >= 20)"
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
