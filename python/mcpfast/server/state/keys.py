"""Signing keys for session ids and ``requestState``: several verify (rotation), the first signs.

Configuration, first match wins:
  ``MCPFAST_KEYS``       ``kid:base64key[,kid:base64key...]`` (the first one signs)
  ``MCPFAST_KEYS_FILE``  a file holding the same text
  otherwise              a development key generated once and kept in
                         ``$MCPFAST_STATE_DIR`` (default ``~/.cache/mcpfast``)/dev-key, so a
                         restarted server still honours its sessions; start-up says so.
"""

from __future__ import annotations

import base64
import errno
import os
import secrets
import sys
from collections.abc import Mapping
from pathlib import Path

import msgspec

_MIN_KEY = 16


class KeyRing(msgspec.Struct, frozen=True):
    """The keys that verify, by id, and the id of the one that signs."""

    keys: Mapping[str, bytes]
    signing: str
    development: bool = False

    @property
    def signing_key(self) -> bytes:
        return self.keys[self.signing]


def parse_keys(text: str) -> KeyRing:
    """Parse ``kid:base64key,...``.

    Raises:
        ValueError: for an entry without a colon, bad base64, or a key shorter than 16 bytes.
    """
    keys: dict[str, bytes] = {}
    order = []
    for entry in text.replace("\n", ",").split(","):
        entry = entry.strip()
        if not entry:
            continue
        kid, sep, encoded = entry.partition(":")
        if not sep:
            raise ValueError("each key must read kid:base64key")
        key = base64.b64decode(encoded.strip() + "=" * (-len(encoded.strip()) % 4), altchars=b"-_")
        if len(key) < _MIN_KEY:
            raise ValueError(f"key {kid!r} is shorter than {_MIN_KEY} bytes")
        keys[kid.strip()] = key
        order.append(kid.strip())
    if not order:
        raise ValueError("no keys configured")
    return KeyRing(keys=keys, signing=order[0])


def development_key(directory: Path) -> KeyRing:
    """The development key kept in ``directory`` (created on first use, readable only by us).

    Raises:
        PermissionError: the key file is a link, owned by another user, or writable by others
            (whoever could write it could choose the key that signs sessions).
    """
    path = directory / "dev-key"
    if not path.exists():
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        # Created 0600 (never readable by others, whatever the umask) and written whole under a
        # name of our own, then linked into place only if no other process got there first:
        # servers starting at once all end up with the same key.
        tmp = directory / f"dev-key.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with open(fd, "w") as file:
            file.write(base64.urlsafe_b64encode(secrets.token_bytes(32)).decode())
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    ring = parse_keys("dev:" + _read_own(path))
    return KeyRing(keys=ring.keys, signing=ring.signing, development=True)


def _read_own(path: Path) -> str:
    """The text of ``path``, a file of ours that no one else may write (not followed if a link).

    Raises:
        PermissionError: it is not.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        message = "a link, refused as the development key"
        raise PermissionError(errno.EPERM, message, str(path)) from None
    with open(fd) as file:
        info = os.fstat(fd)
        if info.st_uid != os.getuid() or info.st_mode & 0o022:
            raise PermissionError(
                errno.EPERM,
                "owned by another user or writable by others, refused as the development key "
                "(remove it, or set MCPFAST_KEYS)",
                str(path),
            )
        return file.read().strip()


def load_keys(environ: Mapping[str, str] = os.environ) -> KeyRing:
    """Keys from the environment or a file, else the development key (announced on stderr)."""
    if environ.get("MCPFAST_KEYS"):
        return parse_keys(environ["MCPFAST_KEYS"])
    if environ.get("MCPFAST_KEYS_FILE"):
        return parse_keys(Path(environ["MCPFAST_KEYS_FILE"]).read_text())
    directory = Path(environ.get("MCPFAST_STATE_DIR") or Path.home() / ".cache" / "mcpfast")
    ring = development_key(directory)
    print(
        f"mcpfast: using a development signing key from {directory / 'dev-key'}; "
        "set MCPFAST_KEYS for production",
        file=sys.stderr,
    )
    return ring
