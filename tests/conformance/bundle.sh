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
