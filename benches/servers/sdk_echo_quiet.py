"""``sdk_echo.py`` with its logs at WARNING. The SDK's default (INFO, through rich) writes two
lines for every session (created, terminated): a cost that session churn multiplies, and one a
deployment may turn off.

python sdk_echo_quiet.py PORT hypercorn|uvicorn stateless|session
"""

import logging
import runpy
from pathlib import Path

# The root logger configured first: the SDK's own `logging.basicConfig` then changes nothing.
logging.basicConfig(level=logging.WARNING)
runpy.run_path(str(Path(__file__).with_name("sdk_echo.py")), run_name="__main__")
