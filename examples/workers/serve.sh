#!/usr/bin/env bash
# Several workers sharing one Redis bus: any worker of any host answers any request of any
# session (a legacy session's elicitation answer too, whichever worker it reaches). Run the same
# command on every host, behind any load balancer, with the same MCPFAST_KEYS and the same Redis.
#
#   REDIS_URL=redis://127.0.0.1:6379/0 bash examples/workers/serve.sh [--engine native]
#   python examples/weather/client.py http://127.0.0.1:8000/mcp legacy
set -euo pipefail
# Session ids and requestState are signed with these keys: every worker and host needs the same.
export MCPFAST_KEYS="${MCPFAST_KEYS:-k1:$(head -c 32 /dev/urandom | base64 -w0)}"
exec mcpfast serve "$(dirname "$0")/../weather/server.py:server" --port "${PORT:-8000}" \
    --workers "${WORKERS:-2}" --bus "${REDIS_URL:-redis://127.0.0.1:6379/0}" "$@"
