"""Command lines from the option table (`mcpfast.load.options.OPTIONS`): ``mcpfast load``'s
argparse options (`add_arguments`), the suite's ``--mcp-*`` options on locust's parser
(`add_suite_options`), and the locust command that runs what ``mcpfast load`` was given
(`locust_command`, its suite options by `suite_options`). Pure: no locust here.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from . import LOCUSTFILE
from .mix import config_users, parse_mix
from .options import GROUPS, OPTIONS, USER_CLASSES, Option
from .pinning import pinned_era

__all__ = ["add_arguments", "add_suite_options", "check_auth", "locust_command", "suite_options"]


def _argparse(row: Option) -> dict[str, Any]:
    """``add_argument``'s keywords for ``row`` (those it leaves unset left out)."""
    spelled = {
        "default": row.default,
        "type": row.type,
        "choices": row.choices,
        "metavar": row.metavar,
        "action": row.action,
        "nargs": row.nargs,
        "dest": row.dest,
        "help": row.help,
    }
    return {k: v for k, v in spelled.items() if v is not None or k == "default"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``mcpfast load``'s options (the rows with ``flags``), each in its `GROUPS` section."""
    groups: dict[str, Any] = {}
    for row in OPTIONS:
        if not row.flags:
            continue
        where: Any = parser
        if row.group:
            if row.group not in groups:
                groups[row.group] = parser.add_argument_group(row.group, GROUPS[row.group])
            where = groups[row.group]
        where.add_argument(*row.flags, **_argparse(row))


def add_suite_options(parser: Any) -> None:
    """The suite's ``--mcp-*`` options (the rows with ``suite``) on locust's parser: with their
    ``MCPFAST_LOAD_*`` variables, and choices only where the web UI's list can hold the default.
    """
    for row in OPTIONS:
        if not row.suite:
            continue
        keywords = {k: v for k, v in _argparse(row).items() if k != "dest"}
        if row.choices is not None and row.default not in row.choices:
            del keywords["choices"]
        if row.env:
            keywords["env_var"] = "MCPFAST_LOAD_" + row.suite[6:].upper().replace("-", "_")
        parser.add_argument(row.suite, include_in_web_ui=row.web_ui, **keywords)


def suite_options(values: Mapping[str, Any]) -> list[str]:
    """The suite's options for what ``mcpfast load`` was given (``values``: its parsed
    arguments by `Option.name`): each row with both spellings whose value is set."""
    options: list[str] = []
    for row in OPTIONS:
        if not (row.suite and row.flags):
            continue
        value = values.get(row.name)
        if row.action == "store_true":
            options += [row.suite] if value else []
        elif value is not None and value != "":
            options += [row.suite, str(value)]
    return options


def check_auth(args: Any) -> None:
    """Refuse inconsistent authorization options, or a named environment variable that is unset.

    Raises:
        SystemExit: with the reason.
    """
    bearer = getattr(args, "bearer_env", "")
    client_id = getattr(args, "client_id", "")
    secret = getattr(args, "client_secret_env", "")
    if bearer and client_id:
        raise SystemExit("give --bearer-env or --client-id, not both")
    if not client_id and (
        secret
        or getattr(args, "scope", "")
        or getattr(args, "token_url", "")
        or getattr(args, "auth_issuer", "")
        or getattr(args, "dpop", False)
    ):
        raise SystemExit(
            "--client-secret-env, --scope, --token-url, --auth-issuer and --dpop need --client-id"
        )
    if client_id and not secret:
        raise SystemExit("--client-id needs --client-secret-env VAR (the secret's variable)")
    if client_id and not (getattr(args, "auth_issuer", "") or getattr(args, "token_url", "")):
        raise SystemExit(
            "--client-id needs --auth-issuer URL: the authorization server its secret is for "
            "(or --token-url)"
        )
    for flag, name in (("--bearer-env", bearer), ("--client-secret-env", secret)):
        if name and not os.environ.get(name, "").strip():
            raise SystemExit(f"{flag}: the environment variable {name} is not set")


def locust_command(args: Any, out: Path) -> list[str]:
    """The locust command line for ``args`` (``--csv``/``--html`` into ``out``); the suite's
    options carry the names of secrets' variables, never their values (the child inherits the
    environment).

    Raises:
        SystemExit: ``--arguments`` is not a JSON object, the authorization options do not fit
            (`check_auth`), or the pinned revision is of another era than ``--era`` forces.
    """
    if args.arguments:
        try:
            parsed = json.loads(args.arguments)
        except ValueError as exc:
            raise SystemExit(f"--arguments is not JSON: {exc}") from None
        if not isinstance(parsed, dict):
            raise SystemExit("--arguments must be a JSON object")
    command = [
        sys.executable,
        "-m",
        "locust",
        "-f",
        str(LOCUSTFILE),
        "--users",
        str(args.users),
        "--spawn-rate",
        str(args.spawn_rate if args.spawn_rate is not None else args.users),
        "--run-time",
        args.run_time,
    ]
    if args.url:
        command += ["--host", args.url]
    era = _era(args)
    check_auth(args)
    command += suite_options({**vars(args), "era": era})
    if args.processes:
        command += ["--processes", str(args.processes)]
    command += distributed_options(args)
    if args.web:
        command += ["--web-host", "127.0.0.1", "--web-port", str(args.web_port), "--class-picker"]
    elif getattr(args, "worker", False):
        command += ["--headless", "--mcp-progress"]
    else:
        command += [
            "--headless",
            "--only-summary",
            "--mcp-progress",
            "--csv",
            str(out / "load"),
            "--csv-full-history",
            "--html",
            str(out / "report.html"),
            "--exit-code-on-error",
            "0",
        ]
    command += _classes(args)
    return command


def distributed_options(args: Any) -> list[str]:
    """locust's options for ``--master`` or ``--worker`` (none otherwise)."""
    if getattr(args, "master", False):
        return [
            "--master",
            "--expect-workers",
            str(args.expect_workers),
            "--expect-workers-max-wait",
            str(args.expect_workers_max_wait),
            "--master-bind-host",
            args.master_bind_host,
            "--master-bind-port",
            str(args.master_bind_port),
        ]
    if getattr(args, "worker", False):
        return [
            "--worker",
            "--master-host",
            args.master_host,
            "--master-port",
            str(args.master_port),
        ]
    return []


def _classes(args: Any) -> list[str]:
    """The end of the locust command: the user classes to run (none: the default mix), with
    ``--mix``'s weights (locust's ``--config-users``, in its one-argument form so that the class
    names are not taken for more of it); ``--mix`` checked by ``runner.check_flows``."""
    if not getattr(args, "mix", ""):
        return [USER_CLASSES[c] for c in args.user_classes or ()]
    weights = parse_mix(args.mix, USER_CLASSES)
    return [f"--config-users={config_users(weights)}", *weights]


def _era(args: Any) -> str:
    """The era ``--era`` and ``--protocol-version`` give (`mcpfast.load.pinning`).

    Raises:
        SystemExit: the pinned revision is of the other era than ``--era`` forces.
    """
    try:
        return pinned_era(args.era, args.protocol_version)
    except ValueError as exc:
        raise SystemExit(f"--protocol-version: {exc}") from None
