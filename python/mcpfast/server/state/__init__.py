"""What outlives a request: the bus (in-process or Redis), sessions, the request state a
client holds, the keys that sign them, the replay cache and the task records. Imports nothing
above it (no framework, core, engine, auth or ops module)."""
