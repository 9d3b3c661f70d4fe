"""The build backend's pure-Python wheel (``build_backend/mcpfast_build.py``, no Rust toolchain),
read as an installer reads it; and the version, written once in ``Cargo.toml``."""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import importlib.util
import re
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path
from types import ModuleType

import pytest

import mcpfast
from mcpfast import _fallback

from ..helpers import REPO


def _backend() -> ModuleType:
    """``build_backend/mcpfast_build.py``, loaded as a frontend would (it is no package)."""
    spec = importlib.util.spec_from_file_location(
        "mcpfast_build", REPO / "build_backend" / "mcpfast_build.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


mcpfast_build = _backend()
CARGO_VERSION = tomllib.loads((REPO / "Cargo.toml").read_text())["package"]["version"]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


@pytest.fixture
def no_cargo(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The backend run as a frontend runs it (in the project's root), on a ``PATH`` without
    cargo."""
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))


def test_the_version_is_cargos_everywhere() -> None:
    assert "version" in PROJECT["dynamic"] and "version" not in PROJECT
    assert mcpfast.__version__ == importlib.metadata.version("mcpfast") == CARGO_VERSION
    first = re.search(r"^## (\S+)", (REPO / "CHANGELOG.md").read_text(), re.MULTILINE)
    assert first is not None and first[1] == CARGO_VERSION


@pytest.mark.usefixtures("no_cargo")
def test_without_cargo_the_wheel_is_pure_and_says_what_it_costs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert not mcpfast_build.has_toolchain()
    assert mcpfast_build.get_requires_for_build_wheel() == []
    name = mcpfast_build.build_wheel(str(tmp_path))
    assert name == f"mcpfast-{CARGO_VERSION}-py3-none-any.whl"
    warning = capsys.readouterr().err
    assert "WARNING: no Rust toolchain (cargo) found" in warning
    assert _fallback.COST in warning and _fallback.REMEDY in warning

    with zipfile.ZipFile(tmp_path / name) as wheel:
        files = set(wheel.namelist())
        sources = {
            path.relative_to(REPO / "python").as_posix()
            for path in (REPO / "python" / "mcpfast").rglob("*")
            if path.is_file() and "__pycache__" not in path.parts
        }
        assert files - sources == {
            f"mcpfast-{CARGO_VERSION}.dist-info/{part}"
            for part in ("METADATA", "entry_points.txt", "WHEEL", "RECORD")
        }
        assert sources - files == {p for p in sources if p.endswith((".so", ".pyd"))}
        _check_record(wheel)
        info = f"mcpfast-{CARGO_VERSION}.dist-info"
        metadata = Parser().parsestr(wheel.read(f"{info}/METADATA").decode())
        entry_points = wheel.read(f"{info}/entry_points.txt").decode()
        assert "Root-Is-Purelib: true" in wheel.read(f"{info}/WHEEL").decode()

    assert metadata["Name"] == "mcpfast" and metadata["Version"] == CARGO_VERSION
    assert metadata["Requires-Python"] == PROJECT["requires-python"]
    requires = metadata.get_all("Requires-Dist", [])
    assert requires[: len(PROJECT["dependencies"])] == PROJECT["dependencies"]
    assert set(metadata.get_all("Provides-Extra", [])) == set(PROJECT["optional-dependencies"])
    assert 'coredis>=6,<7; extra == "redis"' in requires
    assert str(metadata.get_payload()).startswith("# mcpfast")
    assert "mcpfast = mcpfast.cli:main" in entry_points.splitlines()


@pytest.mark.usefixtures("no_cargo")
def test_without_cargo_an_editable_install_names_the_sources(tmp_path: Path) -> None:
    name = mcpfast_build.build_editable(str(tmp_path))
    with zipfile.ZipFile(tmp_path / name) as wheel:
        assert wheel.read("mcpfast.pth").decode() == f"{REPO / 'python'}\n"
        _check_record(wheel)
        assert not [n for n in wheel.namelist() if n.startswith("mcpfast/")]


def test_an_sdist_is_maturins() -> None:
    assert mcpfast_build.get_requires_for_build_sdist() == [mcpfast_build.MATURIN]


def _check_record(wheel: zipfile.ZipFile) -> None:
    """Every file is in RECORD with its size and sha256, as pip checks them."""
    (record,) = [n for n in wheel.namelist() if n.endswith(".dist-info/RECORD")]
    rows = dict(line.split(",", 1) for line in wheel.read(record).decode().splitlines())
    assert set(rows) == set(wheel.namelist())
    for path, row in rows.items():
        if path != record:
            data = wheel.read(path)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            assert row == f"sha256={digest.decode()},{len(data)}", path
