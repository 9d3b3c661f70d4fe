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
    """The development key kept in ``directory`` (created on first use, readable only by us)."""
    path = directory / "dev-key"
    if not path.exists():
        directory.mkdir(parents=True, exist_ok=True)
        # Written whole under a name of our own, then linked into place only if no other
        # process got there first: servers starting at once all end up with the same key.
        tmp = directory / f"dev-key.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        tmp.write_text(base64.urlsafe_b64encode(secrets.token_bytes(32)).decode())
        tmp.chmod(0o600)
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    ring = parse_keys("dev:" + path.read_text().strip())
    return KeyRing(keys=ring.keys, signing=ring.signing, development=True)


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
