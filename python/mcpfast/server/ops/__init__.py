"""Operations around a served `Endpoint`: several workers and their target, the metrics
listener, mcpfast's own log lines. May import every other wing."""
