"""mcpfast's PEP 517 build backend (``pyproject.toml``: ``backend-path = ["build_backend"]``).

Where a Rust toolchain runs (``cargo --version`` succeeds), every hook is maturin's, and a wheel
is built on the stable ABI (Cargo's ``abi3`` feature: one wheel for every CPython >= 3.11 of this
platform; an editable install stays a build for its own interpreter, as ``make setup``'s is).
Without one, a wheel or an editable install is pure Python: the package without its extension,
so the codec is its pure-Python twin, and the build says so on stderr with the cost
(``mcpfast/_fallback.py``, which ``mcpfast.BACKEND_REASON`` repeats at run time). Maturin alone
would download a Rust toolchain instead, or fail.

The pure wheel is written here with the standard library (no other build dependency to fetch):
its metadata from ``[project]`` (the version from ``Cargo.toml``, as maturin takes it), the
sources from ``python/``. An sdist is always maturin's (it needs cargo).
"""

from __future__ import annotations

import base64
import hashlib
import re
import runpy
import shutil
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

MATURIN = "maturin>=1.7,<2"
SOURCE = Path("python")
PACKAGE = SOURCE / "mcpfast"
COMPILED = (".so", ".pyd")
TAG = "py3-none-any"

Settings = Mapping[str, Any] | None


def has_toolchain() -> bool:
    """Whether cargo is on ``PATH`` and runs (a rustup shim without a toolchain does not)."""
    cargo = shutil.which("cargo")
    if cargo is None:
        return False
    try:
        return subprocess.run([cargo, "--version"], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def get_requires_for_build_wheel(config_settings: Settings = None) -> list[str]:
    return [MATURIN] if has_toolchain() else []


get_requires_for_build_editable = get_requires_for_build_wheel


def get_requires_for_build_sdist(config_settings: Settings = None) -> list[str]:
    return [MATURIN]


def build_sdist(sdist_directory: str, config_settings: Settings = None) -> str:
    import maturin

    return str(maturin.build_sdist(sdist_directory, config_settings))


def build_wheel(
    wheel_directory: str, config_settings: Settings = None, metadata_directory: str | None = None
) -> str:
    """An abi3 wheel from maturin, or the pure-Python wheel."""
    if has_toolchain():
        import maturin

        settings = dict(config_settings or {})
        args = settings.get("maturin.build-args", "")
        settings["maturin.build-args"] = f"{args} --features abi3".strip()
        return str(maturin.build_wheel(wheel_directory, settings, metadata_directory))
    _say_pure()
    return _write_wheel(Path(wheel_directory), _package_files())


def build_editable(
    wheel_directory: str, config_settings: Settings = None, metadata_directory: str | None = None
) -> str:
    """Maturin's editable install, or a ``.pth`` naming ``python/`` (no extension)."""
    if has_toolchain():
        import maturin

        return str(maturin.build_editable(wheel_directory, config_settings, metadata_directory))
    _say_pure()
    pth = f"{SOURCE.resolve()}\n".encode()
    return _write_wheel(Path(wheel_directory), iter([("mcpfast.pth", pth)]))


def _say_pure() -> None:
    fallback = runpy.run_path(str(PACKAGE / "_fallback.py"))
    print(
        "mcpfast: WARNING: no Rust toolchain (cargo) found, so this is a pure-Python wheel: "
        f"{fallback['COST']}; {fallback['REMEDY']}",
        file=sys.stderr,
    )


def _package_files() -> Iterator[tuple[str, bytes]]:
    """The package's files as the wheel names them, without compiled extensions or caches."""
    for path in sorted(PACKAGE.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix not in COMPILED:
            yield path.relative_to(SOURCE).as_posix(), path.read_bytes()


def _write_wheel(directory: Path, files: Iterator[tuple[str, bytes]]) -> str:
    """Write ``files`` and the dist-info (metadata, entry points, WHEEL, RECORD) as a wheel."""
    project = tomllib.loads(Path("pyproject.toml").read_text())["project"]
    version = tomllib.loads(Path("Cargo.toml").read_text())["package"]["version"]
    if not re.fullmatch(r"\d+(\.\d+)*", version):
        raise ValueError(f"Cargo.toml's version {version!r} is not a plain release number")
    info = f"mcpfast-{version}.dist-info"
    name = f"mcpfast-{version}-{TAG}.whl"
    scripts = "".join(f"{k} = {v}\n" for k, v in project.get("scripts", {}).items())
    wheel = f"Wheel-Version: 1.0\nGenerator: mcpfast_build\nRoot-Is-Purelib: true\nTag: {TAG}\n"
    record: list[str] = []
    with zipfile.ZipFile(directory / name, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, data in [
            *files,
            (f"{info}/METADATA", _metadata(project, version).encode()),
            (f"{info}/entry_points.txt", f"[console_scripts]\n{scripts}".encode()),
            (f"{info}/WHEEL", wheel.encode()),
        ]:
            archive.writestr(path, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record.append(f"{path},sha256={digest.decode()},{len(data)}\n")
        archive.writestr(f"{info}/RECORD", "".join(record) + f"{info}/RECORD,,\n")
    return name


def _metadata(project: dict[str, Any], version: str) -> str:
    """Core metadata 2.1 of ``[project]``: what pip reads to install the dependencies."""
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {project['name']}",
        f"Version: {version}",
        f"Summary: {project['description']}",
        f"License: {project['license']['text']}",
        f"Requires-Python: {project['requires-python']}",
        *(f"Requires-Dist: {requirement}" for requirement in project["dependencies"]),
    ]
    for extra, requirements in project.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        for requirement in requirements:
            spec, _, marker = requirement.partition(";")
            marker = f"({marker.strip()}) and " if marker.strip() else ""
            lines.append(f'Requires-Dist: {spec.strip()}; {marker}extra == "{extra}"')
    readme = Path(project["readme"]).read_text(encoding="utf-8")
    return "\n".join([*lines, "Description-Content-Type: text/markdown", "", readme])
