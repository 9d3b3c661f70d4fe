"""The development signing key in a state directory others can write (a shared
``$MCPFAST_STATE_DIR``): a key planted by someone else (another owner, writable by others, a
link) would let its author forge session ids and ``requestState``, so it is refused; the key
generated here is never readable by others, whatever the umask."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcpfast.server.state.keys import load_keys

PLANTED = "planted-key-chosen-by-someone-else"


def environ(state: Path) -> dict[str, str]:
    return {"MCPFAST_STATE_DIR": str(state)}


def test_a_generated_key_is_ours_alone_whatever_the_umask(tmp_path: Path) -> None:
    previous = os.umask(0)
    try:
        ring = load_keys(environ(tmp_path / "state"))
    finally:
        os.umask(previous)
    assert ring.development
    assert (tmp_path / "state" / "dev-key").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "state").stat().st_mode & 0o077 == 0
    assert load_keys(environ(tmp_path / "state")) == ring


@pytest.mark.parametrize("mode", [0o666, 0o620, 0o602])
def test_a_key_others_can_write_is_refused(tmp_path: Path, mode: int) -> None:
    (tmp_path / "dev-key").write_text(PLANTED)
    (tmp_path / "dev-key").chmod(mode)
    with pytest.raises(PermissionError, match="writable by others"):
        load_keys(environ(tmp_path))


def test_a_key_that_is_a_link_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text(PLANTED)
    elsewhere.chmod(0o600)
    (tmp_path / "state").mkdir()
    os.symlink(elsewhere, tmp_path / "state" / "dev-key")
    with pytest.raises(PermissionError, match="a link"):
        load_keys(environ(tmp_path / "state"))


@pytest.mark.skipif(os.getuid() != 0, reason="giving a file to another user needs root")
def test_a_key_of_another_user_is_refused(tmp_path: Path) -> None:
    (tmp_path / "dev-key").write_text(PLANTED)
    (tmp_path / "dev-key").chmod(0o600)
    os.chown(tmp_path / "dev-key", 65534, 65534)
    with pytest.raises(PermissionError, match="another user"):
        load_keys(environ(tmp_path))
