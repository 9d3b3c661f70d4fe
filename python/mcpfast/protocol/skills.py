"""The Skills extension (SEP-2640, ``io.modelcontextprotocol/skills``), sans I/O: its wire shapes
(a skill entry and its ``{uri, digest, size}`` triples, the params of
``resources/directory/read``), its limits, the ``skill://`` URI rules and the ``SKILL.md``
front matter.

A skill is a directory of files, ``SKILL.md`` at its root, served as resources at
``skill://<skill-path>/<file-path>``; the final ``<skill-path>`` segment is the skill's name.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Literal
from urllib.parse import quote

import msgspec

from ..types import ListParams

SKILLS_EXTENSION = "io.modelcontextprotocol/skills"
DIRECTORY_READ = "directoryRead"
"""The extension's one setting: the server implements ``resources/directory/read``."""
SCHEME = "skill://"
SKILL_MD = "SKILL.md"
SKILL_MD_MIME_TYPE = "text/markdown"
DIRECTORY_MIME_TYPE = "inode/directory"
MAX_RESOURCES = 512
"""Resources per skill, ``SKILL.md`` included (SEP-2640, Limits)."""
MAX_SKILL_BYTES = 16 * 1024 * 1024
"""Total file size per skill (SEP-2640, Limits)."""
NAME = re.compile(r"(?!.*--)[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?\Z")
"""The Agent Skills naming rule: 1-64 lowercase letters, digits and hyphens, no hyphen first,
last or twice in a row."""
MAX_DESCRIPTION = 1024
"""The longest ``description`` the Agent Skills specification allows."""
_FRONT_MATTER = re.compile(r"---\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_SEGMENT_SAFE = "-._~!$&'()*+,;="
"""What a ``skill://`` URI segment keeps as is (RFC 3986 unreserved and sub-delims); the rest
is percent-encoded."""


class SkillFile(msgspec.Struct, frozen=True, kw_only=True):
    """One file of a skill: its resource URI, ``sha256:<hex>`` of its bytes, and its size."""

    uri: str
    digest: str
    size: int


class SkillEntry(msgspec.Struct, frozen=True, kw_only=True):
    """A skill as ``skills/list`` and ``skills/get`` give it: the URI of its ``SKILL.md``, its
    front matter as written, and every one of its files (or ``"dynamic"``: no manifest)."""

    uri: str
    frontmatter: dict[str, Any]
    resources: list[SkillFile] | Literal["dynamic"]


class DirectoryReadParams(ListParams, kw_only=True):
    """``resources/directory/read``: the directory's URI (no trailing slash) and a cursor."""

    uri: str


def digest(data: bytes) -> str:
    """``sha256:`` and the 64 lowercase hex digits of ``data``'s SHA-256."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def segment(text: str) -> str:
    """A file or directory name as a ``skill://`` URI segment (percent-encoded as needed)."""
    return quote(text, safe=_SEGMENT_SAFE)


def skill_uri(skill_path: str, file_path: str = SKILL_MD) -> str:
    """``skill://<skill-path>/<file-path>``; both paths already URI segments joined by ``/``."""
    return f"{SCHEME}{skill_path}/{file_path}"


def front_matter_text(text: str) -> str | None:
    """The YAML between the leading ``---`` lines of a ``SKILL.md`` (a BOM first is ignored);
    None when it has none."""
    match = _FRONT_MATTER.match(text.removeprefix("\ufeff"))
    return match.group(1) if match else None


def check_front_matter(data: Any, name: str) -> dict[str, Any]:
    """``data`` (parsed front matter) when it is an object of JSON values whose ``name``
    equals ``name`` (the skill directory's) and follows `NAME`, with a ``description`` of 1 to
    `MAX_DESCRIPTION` characters.

    Raises:
        ValueError: saying which rule it breaks.
    """
    if not isinstance(data, dict):
        raise ValueError("the front matter is not a mapping")
    _check_json(data, "front matter")
    declared = data.get("name")
    if not isinstance(declared, str) or NAME.match(declared) is None:
        raise ValueError(
            f"name {declared!r} is not 1-64 lowercase letters, digits and single hyphens"
        )
    if declared != name:
        raise ValueError(f"name {declared!r} is not the skill directory's name {name!r}")
    description = data.get("description")
    if not isinstance(description, str) or not 0 < len(description) <= MAX_DESCRIPTION:
        raise ValueError(f"description must be a string of 1 to {MAX_DESCRIPTION} characters")
    return data


def _check_json(value: Any, where: str) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"{where} has a key that is not a string: {key!r}")
            _check_json(item, f"{where}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_json(item, f"{where}[{index}]")
    elif value is not None and not isinstance(value, str | int | float | bool):
        raise ValueError(f"{where} is a {type(value).__name__}, not a JSON value (quote it)")
