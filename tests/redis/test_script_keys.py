"""On a Redis Cluster a script runs on the node of its keys' slot: each script of `RedisBus`
names every key it touches in ``KEYS`` (none built inside it). That the keys a bus passes share
one hash slot the Cluster itself checks (CROSSSLOT): `test_contract` runs on one."""

from __future__ import annotations

import re

import pytest
from coredis.commands.script import Script

from mcpfast.server.state import redis_limits, redis_scripts

KEY_ARGUMENT = {
    "DEL": 1,
    "EXISTS": 1,
    "GET": 1,
    "HMGET": 1,
    "HSET": 1,
    "PEXPIRE": 1,
    "PTTL": 1,
    "SET": 1,
    "XADD": 1,
    "XINFO": 2,
    "XRANGE": 1,
    "ZADD": 1,
    "ZRANGE": 1,
    "ZREM": 1,
    "PUBLISH": None,
    "TIME": None,
}
"""Which argument of each command a script calls is its key (None: it takes no key; a
``PUBLISH`` channel is not one). A script calling another command needs a row here."""

_CALL = re.compile(r"redis\.call\(|pcall\(redis\.call,")

SCRIPTS = {
    name: value.script
    for module in (redis_scripts, redis_limits)
    for name, value in vars(module).items()
    if isinstance(value, Script) and isinstance(value.script, str)
}


def _calls(source: str) -> list[list[str]]:
    """The arguments of every ``redis.call`` in ``source`` (split at top-level commas)."""
    calls = []
    for match in _CALL.finditer(source):
        depth, start, arguments = 1, match.end(), []
        for index in range(match.end(), len(source)):
            char = source[index]
            if char in "({":
                depth += 1
            elif char in ")}":
                depth -= 1
            if depth == 0 or (depth == 1 and char == ","):
                arguments.append(source[start:index].strip())
                start = index + 1
            if depth == 0:
                break
        calls.append([argument for argument in arguments if argument])
    return calls


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_a_script_touches_only_the_keys_it_is_given(name: str) -> None:
    calls = _calls(SCRIPTS[name])
    assert calls, f"{name} calls nothing?"
    for arguments in calls:
        command = arguments[0].strip("'\"").upper()
        assert command in KEY_ARGUMENT, f"{name}: {command} needs a row in KEY_ARGUMENT"
        position = KEY_ARGUMENT[command]
        if position is not None:
            assert re.fullmatch(r"KEYS\[[^\]]+\]", arguments[position]), (
                f"{name}: {command}'s key {arguments[position]!r} is not one of KEYS"
            )
