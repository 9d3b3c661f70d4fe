"""The soak's server: the demo server with its bus's stores bounded small (`LocalBus`), so that
every store (session records and endings, recorded response streams, the event log, task
records) is full within the soak's warm-up, and memory after that shows what does not stop
growing. The bounds are the stores' own (the defaults are larger: the same growth, capped later).
"""

from mcpfast.demo import server
from mcpfast.server.state.local_bus import LocalBus

server.bus = LocalBus(log_size=200, max_sessions=2000, max_streams=200, max_tasks=500)
