"""What ``mcpfast serve TARGET`` (and each of its workers) serves: a `Server` named by
``module:attribute`` or ``file.py:attribute``."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from ..framework.app import Server


class TargetError(ValueError):
    """A target that names no `Server`; the message says why, in one line."""


def load_target(target: str | None) -> Server:
    """The `Server` named by ``module:attribute`` or ``file.py:attribute`` (attribute
    ``server`` when left out); the demo if None. Modules are imported from the current
    directory first, as uvicorn and hypercorn do.

    Raises:
        TargetError: no such module or file, no such attribute, not a Server; a module that
            cannot be imported (a syntax error, a module it imports is missing: `_failure`).
            Any other exception raised by the module's own code propagates as is.
    """
    if target is None:
        from ...demo import server

        return server
    module_name, _, attribute = target.partition(":")
    attribute = attribute or "server"
    if not module_name:
        raise TargetError(f"{target!r}: give module:attribute or file.py:attribute")
    _put_cwd_on_path()
    try:
        module = _load_file(module_name) if module_name.endswith(".py") else _import(module_name)
    except (SyntaxError, ImportError) as exc:
        raise _failure(exc) from None
    found = getattr(module, attribute, None)
    if found is None:
        servers = [name for name, value in vars(module).items() if isinstance(value, Server)]
        hint = f" (its Servers: {', '.join(servers)})" if servers else ""
        raise TargetError(f"{module_name} has no attribute {attribute!r}{hint}")
    if not isinstance(found, Server):
        kind = type(found).__name__
        article = "an" if kind[:1].lower() in "aeiou" else "a"
        raise TargetError(
            f"{module_name}:{attribute} is not an mcpfast.Server (but {article} {kind})"
        )
    return found


def _failure(exc: SyntaxError | ImportError) -> TargetError:
    """``file:line: SyntaxError: ...`` for a module that cannot be imported: where the syntax
    error is, or the last line outside the import machinery (the failed ``import``)."""
    if isinstance(exc, SyntaxError):
        filename, line, message = exc.filename or "?", exc.lineno, exc.msg
    else:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if _own(f.filename)]
        if not frames:
            return TargetError(f"{type(exc).__name__}: {exc}")
        filename, line, message = frames[-1].filename, frames[-1].lineno, str(exc)
    if filename.startswith(os.getcwd() + os.sep):
        filename = os.path.relpath(filename)
    return TargetError(f"{filename}:{line}: {type(exc).__name__}: {message}")


def _own(filename: str) -> bool:
    """A frame of the imported code, not of importlib or of this module."""
    return not filename.startswith("<frozen") and filename != __file__


def _put_cwd_on_path() -> None:
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)


def _import(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing != name and not name.startswith(missing + "."):
            raise  # the module itself imports something missing: `_failure`
        raise TargetError(
            f"no module named {missing!r} (in {os.getcwd()} or on sys.path)"
        ) from None


def _load_file(path_text: str) -> Any:
    path = Path(path_text).resolve()
    if not path.is_file():
        raise TargetError(f"no such file: {path_text}")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise TargetError(f"cannot load {path_text}")
    module = importlib.util.module_from_spec(spec)
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))  # its sibling modules import as they would
    sys.modules.setdefault(path.stem, module)
    spec.loader.exec_module(module)
    return module
