#!/usr/bin/env bash
# A load test that gates CI: ten seconds of load on the server at $1; exit 4 when a threshold
# fails (the output names which), 1 when a request failed, 0 otherwise. The JSON summary is
# written to ${OUT:-load-results}/load.json for the CI's artefacts.
#
#   bash examples/load-gate/ci-load.sh http://127.0.0.1:8000/mcp
set -euo pipefail
url="$1"
out="${OUT:-load-results}"
mcpfast load "$url" -u "${USERS:-10}" -t "${DURATION:-10s}" -q --out "$out" \
    --tool add --arguments '{"a": 1, "b": 2}' \
    --fail-on "errors>0%" \
    --fail-on "p99>${P99_MS:-500}ms" \
    --fail-on "rps<${MIN_RPS:-20}" \
    --json "$out/load.json"
