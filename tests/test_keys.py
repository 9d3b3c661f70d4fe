"""Signing keys: configuration, rotation, and the development key kept on disk."""

from __future__ import annotations

import base64
import subprocess
import sys
from pathlib import Path

import pytest

from mcpfast.server.state import sessions
from mcpfast.server.state.keys import load_keys, parse_keys

K1 = base64.b64encode(b"k" * 32).decode()
K2 = base64.urlsafe_b64encode(b"\xfb" * 32).decode()


def test_the_first_key_signs_and_all_verify() -> None:
    old = parse_keys(f"one:{K1}")
    rotated = parse_keys(f"two:{K2}, one:{K1}")
    assert rotated.signing == "two"
    token = sessions.mint(old, sessions.new_session("2025-11-25", {}, 64 * 1024))
    session, _ = sessions.open_session(rotated, token, 3600)
    assert session.version == "2025-11-25"
    fresh = sessions.mint(rotated, session)
    assert fresh.split(".")[1] == "two"


@pytest.mark.parametrize("text", ["", "nocolon", f"short:{base64.b64encode(b'tiny').decode()}"])
def test_bad_key_configuration_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_keys(text)


def test_keys_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "keys"
    path.write_text(f"a:{K1}\nb:{K2}\n")
    ring = load_keys({"MCPFAST_KEYS_FILE": str(path)})
    assert ring.signing == "a" and set(ring.keys) == {"a", "b"} and not ring.development


def test_development_key_is_generated_once_kept_and_announced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = load_keys({"MCPFAST_STATE_DIR": str(tmp_path)})
    assert first.development
    assert "development signing key" in capsys.readouterr().err
    assert (tmp_path / "dev-key").stat().st_mode & 0o777 == 0o600
    second = load_keys({"MCPFAST_STATE_DIR": str(tmp_path)})
    assert second.keys == first.keys


@pytest.mark.slow
def test_servers_starting_at_once_share_one_development_key(tmp_path: Path) -> None:
    code = (
        "import sys; from pathlib import Path; from mcpfast.server.state.keys import development_key;"
        "print(development_key(Path(sys.argv[1])).signing_key.hex())"
    )
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(8)
    ]
    keys = {process.communicate(timeout=60)[0].strip() for process in processes}
    assert len(keys) == 1 and "" not in keys
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dev-key"]
