"""mcpfast's own log lines (the ``mcpfast.*`` loggers): their level and format on stderr
(``Config.log_level``, ``log_format``; ``mcpfast serve --log-level``, ``--log-format``)."""

from __future__ import annotations

import logging
import sys
from datetime import UTC, datetime

import msgspec

from ..config import Config


class LogLine(msgspec.Struct):
    """One JSON log line."""

    time: str
    level: str
    logger: str
    message: str


class JsonFormatter(logging.Formatter):
    """A log record as one JSON object (`LogLine`, plus ``exc_info`` text when there is one)."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")
        message = record.getMessage()
        if record.exc_info:
            message += "\n" + self.formatException(record.exc_info)
        line = LogLine(stamp.replace("+00:00", "Z"), record.levelname, record.name, message)
        return msgspec.json.encode(line).decode()


TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class _Handler(logging.StreamHandler):  # type: ignore[type-arg]
    """The stderr handler `configure_logging` installs (once: later calls adjust it)."""


def configure_logging(config: Config) -> None:
    """With ``config.log_level`` set, set the ``mcpfast`` logger's level and write its lines
    (and its children's) to stderr in ``config.log_format``; else leave logging alone."""
    if config.log_level is None:
        return
    logger = logging.getLogger("mcpfast")
    logger.setLevel(config.log_level.upper())
    handler = next((h for h in logger.handlers if isinstance(h, _Handler)), None)
    if handler is None:
        handler = _Handler(sys.stderr)
        logger.addHandler(handler)
    handler.setFormatter(
        JsonFormatter() if config.log_format == "json" else logging.Formatter(TEXT_FORMAT)
    )
