"""mcpfast installed as a user installs it, into clean virtual environments on a machine with no
Rust toolchain (cargo and rustc off ``PATH``, ``CARGO_HOME`` and ``RUSTUP_HOME`` nowhere): the
abi3 wheel (the build backend, with cargo, here) on the Rust codec, and the sdist, built into a
pure-Python wheel on the twin while it says so; each serves the demo with ``mcpfast serve`` on
both engines, and its own ``mcpfast call`` calls a tool.

The dependencies come from one wheelhouse per run, fetched once (from pip's cache when it has
them); both installs read it alone (``--no-index``). The wheel's Rust build reuses the cargo
target directory of ``make setup`` (``target/``, or ``CARGO_TARGET_DIR``). Serial: the build
wants the machine."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import tempfile
import tomllib
from functools import partial
from pathlib import Path

import pytest
import trio

from mcpfast import _fallback

from ..e2e.processes import free_port, server_process
from ..helpers import REPO

pytestmark = [
    pytest.mark.slow,
    pytest.mark.serial,
    pytest.mark.xdist_group("busiest"),  # one at a time (tests/e2e/conftest.py: BUSIEST)
    pytest.mark.timeout(600),
]

ENGINES = ("hypercorn", "native")
TOOLS = Path(sys.executable).parent  # this environment's pip and maturin
STEP_SECONDS = 300


def _run(argv: list[str], env: dict[str, str] | None = None) -> str:
    """Run ``argv`` to its end; its output (stdout and stderr), or a failure showing it."""
    result = subprocess.run(
        argv, env=env, capture_output=True, text=True, timeout=STEP_SECONDS, cwd=REPO
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"{argv} exited {result.returncode}:\n{output}"
    return output


def _without_rust(venv: Path, home: Path) -> dict[str, str]:
    """The environment of a machine with no Rust toolchain, ``venv``'s scripts first, and none
    of this test run's Python (no ``PYTHONPATH``, no shared ``.venv``, no forced codec)."""
    path = [
        directory
        for directory in os.environ["PATH"].split(os.pathsep)
        if directory
        and Path(directory).resolve() != TOOLS.resolve()
        and not any((Path(directory) / tool).exists() for tool in ("cargo", "rustc"))
    ]
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("CARGO", "RUSTUP", "VIRTUAL_ENV", "PYTHON", "MCPFAST_"))
    }
    env.update(
        PATH=os.pathsep.join([str(venv / "bin"), *path]),
        HOME=str(home),
        CARGO_HOME=str(home / "no-cargo"),
        RUSTUP_HOME=str(home / "no-rustup"),
        PYTHONPATH="",
    )
    found = subprocess.run(["sh", "-c", "command -v cargo rustc rustup"], env=env, cwd=home.parent)
    assert found.returncode != 0, "a Rust toolchain is still on PATH"
    return env


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The abi3 wheel and the sdist (both through the build backend's hooks), and a wheelhouse
    of the runtime dependencies."""
    out = tmp_path_factory.mktemp("dist")
    env = {**os.environ, "PATH": f"{TOOLS}{os.pathsep}{os.environ['PATH']}"}
    # pytest-xdist may set this fixture up on two workers at once, and two maturin builds in
    # one cargo target race (one renames the library the other stages): one at a time.
    with (Path(tempfile.gettempdir()) / "mcpfast-packaging.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _run([str(TOOLS / "python"), "-m", "pip", "wheel", "-q", "--no-deps",
              "--no-build-isolation", "-w", str(out), "."], env)  # fmt: skip
    backend = "import sys, mcpfast_build; mcpfast_build.build_sdist(sys.argv[1])"
    _run([str(TOOLS / "python"), "-c", backend, str(out)], {**env, "PYTHONPATH": "build_backend"})
    dependencies = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    house = tmp_path_factory.mktemp("wheelhouse")
    _run([str(TOOLS / "python"), "-m", "pip", "wheel", "-q", "-w", str(house), *dependencies])
    (wheel,) = out.glob("mcpfast-*-abi3-*.whl")
    (sdist,) = out.glob("mcpfast-*.tar.gz")
    return {"wheel": wheel, "sdist": sdist, "wheelhouse": house}


def _install(what: Path, house: Path, root: Path) -> tuple[Path, dict[str, str], str]:
    """A clean venv under ``root`` with ``what`` installed from ``house`` alone, on a machine
    without Rust: the venv, its environment, and the install's output (``-v``: the build's)."""
    venv = root / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    env = _without_rust(venv, root / "home")
    install = [str(TOOLS / "python"), "-m", "pip", "--python", str(venv / "bin" / "python"),
               "install", "-v", "--no-compile", "--no-index", "--find-links", str(house),
               str(what)]  # fmt: skip
    return venv, env, _run(install, env)


async def _serve_and_call(venv: Path, env: dict[str, str], cwd: Path) -> None:
    """The venv's ``mcpfast serve`` (the demo) on each engine, called by its ``mcpfast call``."""
    for engine in ENGINES:
        port = free_port()
        argv = [str(venv / "bin" / "mcpfast"), "serve", "--port", str(port), "--engine", engine]
        async with server_process(argv, port, env, cwd) as url:
            text = f"hello from {venv.parent.name} on {engine}"
            call = [str(venv / "bin" / "mcpfast"), "call", url, "echo", f"text={text}"]
            called = await trio.to_thread.run_sync(partial(_run, call, env))
            assert text in called


async def test_the_abi3_wheel_installs_without_rust_and_serves(
    built: dict[str, Path], tmp_path: Path
) -> None:
    assert built["wheel"].name.startswith("mcpfast-") and "-cp311-abi3-" in built["wheel"].name
    venv, env, _ = _install(built["wheel"], built["wheelhouse"], tmp_path)
    version = _run([str(venv / "bin" / "mcpfast"), "--version"], env)
    assert "codec: rust" in version, version
    installed = venv.glob("lib/python3*/site-packages/mcpfast/_rust*")
    assert sorted(p.name for p in installed) == ["_rust.abi3.so", "_rust.pyi"]
    await _serve_and_call(venv, env, tmp_path)


async def test_the_sdist_installs_without_rust_on_the_twin_saying_so(
    built: dict[str, Path], tmp_path: Path
) -> None:
    venv, env, output = _install(built["sdist"], built["wheelhouse"], tmp_path)
    assert "WARNING: no Rust toolchain (cargo) found" in output and _fallback.COST in output
    version = _run([str(venv / "bin" / "mcpfast"), "--version"], env)
    assert "codec: python (the Rust extension mcpfast._rust is not installed" in version, version
    assert _fallback.COST in version and _fallback.REMEDY in version
    assert not list(venv.glob("lib/python3*/site-packages/mcpfast/_rust*.so"))
    await _serve_and_call(venv, env, tmp_path)
