"""Skills (SEP-2640) from a folder: skill directories read once into `LoadedSkill`s, the
`Catalog` of those a server serves, and the resources their files are served as
(`mcpfast.server.core.methods.skills` answers the extension's methods over the catalog;
`Server.skills_from` puts them together).

The files are read when the folder is registered and served from memory, so what a read
returns is always what the listed digest and size describe; a request never touches the
filesystem, so no URI (``..`` or otherwise) reaches a file that was not registered. The folder
is walked through directory descriptors, each directory and file opened relative to its parent
without following a link (`_open_directory`, `_read_file`): a directory swapped for a link while
the folder loads is refused, never read through.
"""

from __future__ import annotations

import errno
import functools
import mimetypes
import os
import re
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec

from ...protocol.skills import (
    DIRECTORY_MIME_TYPE,
    MAX_RESOURCES,
    MAX_SKILL_BYTES,
    SKILL_MD,
    SKILL_MD_MIME_TYPE,
    SkillEntry,
    SkillFile,
    check_front_matter,
    digest,
    front_matter_text,
    segment,
    skill_uri,
)
from ...types import Resource

MAX_FOLDER_BYTES = 64 * 1024 * 1024
"""The most file bytes one folder of skills may hold (they are kept in memory)."""

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # a FIFO must not block
_NOT_PLAIN = (errno.ELOOP, errno.ENOTDIR, errno.ENXIO)
"""What opening a link, a directory turned file or a socket fails with."""
_REFUSED = "not a regular file or directory (links are refused)"


class SkillFileData(msgspec.Struct, frozen=True, kw_only=True):
    """A file of a skill as read: its URI, name, MIME type and bytes."""

    uri: str
    name: str
    mime_type: str
    data: bytes


class LoadedSkill(msgspec.Struct, frozen=True, kw_only=True):
    """One skill read from a folder: its entry, its files, and its directories' children."""

    entry: SkillEntry
    files: list[SkillFileData]
    directories: dict[str, list[Resource]]


class Catalog:
    """The skills a server serves: entries by ``SKILL.md`` URI in registration order, and every
    directory within them (skill roots included) by URI, with its direct children."""

    def __init__(self) -> None:
        self.entries: dict[str, SkillEntry] = {}
        self.directories: dict[str, list[Resource]] = {}

    def add(self, skill: LoadedSkill) -> None:
        """Add a skill (its directories merge with those a nested or enclosing skill shares).

        Raises:
            ValueError: a skill at this URI is already served.
        """
        if skill.entry.uri in self.entries:
            raise ValueError(f"a skill is already served at {skill.entry.uri}")
        self.entries[skill.entry.uri] = skill.entry
        self.directories.update(skill.directories)


# ----------------------------------------------------------------------------------- loading


def load_folder(
    folder: str | os.PathLike[str],
    *,
    max_resources: int = MAX_RESOURCES,
    max_skill_bytes: int = MAX_SKILL_BYTES,
    max_folder_bytes: int = MAX_FOLDER_BYTES,
) -> list[LoadedSkill]:
    """Every skill under ``folder``: each directory holding a ``SKILL.md`` (the folder itself
    too), its skill path the directory's path below ``folder`` (the folder's own name when it is
    the skill), in sorted order. A skill's files are every regular file below its directory
    (nested skills' too, as SEP-2640 says); names with a leading dot are not served.

    Raises:
        ValueError: a symbolic link or other non-regular file in a skill, a skill over
            ``max_resources`` files or directories or ``max_skill_bytes`` bytes, the folder over
            ``max_folder_bytes``, or a ``SKILL.md`` whose front matter breaks the rules
            (`mcpfast.protocol.skills.check_front_matter`); each naming the path.
        ImportError: PyYAML (which parses the front matter) is not installed.
        OSError: the folder or a file cannot be read.
    """
    root = Path(folder).resolve(strict=True)
    budget = [max_folder_bytes]
    skills = []
    root_fd = os.open(root, _DIRECTORY)
    try:
        for parts in sorted(_skill_directories(root_fd)):
            directory = root.joinpath(*parts)
            skill_path = "/".join(segment(part) for part in parts or (root.name,))
            try:
                with _directory(root_fd, parts, directory) as fd:
                    skill = _load_skill(
                        fd, directory, skill_path, max_resources, max_skill_bytes, budget
                    )
            except ValueError as exc:
                raise ValueError(f"skill {directory}: {exc}") from None
            skills.append(skill)
    finally:
        os.close(root_fd)
    return skills


def _skill_directories(root_fd: int) -> list[tuple[str, ...]]:
    """The directories below the folder (and the folder, ``()``) holding a ``SKILL.md``, as
    paths of names; a link or a name with a leading dot is not descended into."""
    found = []
    pending: list[tuple[str, ...]] = [()]
    while pending:
        parts = pending.pop()
        try:
            with _directory(root_fd, parts, Path(*parts)) as fd:
                entries = _entries(fd)
        except (ValueError, FileNotFoundError):
            continue  # swapped for something else, or gone, since it was listed
        for name, mode in entries:
            if stat.S_ISDIR(mode):
                if not name.startswith("."):
                    pending.append((*parts, name))
            elif name == SKILL_MD:
                found.append(parts)
    return found


def _entries(fd: int) -> list[tuple[str, int]]:
    """The names in the directory ``fd``, sorted, each with its mode (a link's own: not
    followed); one gone since it was listed is left out."""
    entries = []
    for name in sorted(os.listdir(fd)):
        try:
            entries.append((name, os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode))
        except FileNotFoundError:
            pass
    return entries


def _open_plain(name: str, flags: int, fd: int, shown: Path) -> int:
    """``name`` in the directory ``fd`` opened with ``flags`` (which refuse to follow a link).

    Raises:
        ValueError: ``name`` is a link, or not what ``flags`` open (``shown``: its path).
    """
    try:
        return os.open(name, flags, dir_fd=fd)
    except OSError as exc:
        if exc.errno in _NOT_PLAIN:
            raise ValueError(f"{shown}: {_REFUSED}") from None
        raise


@contextmanager
def _directory(fd: int, parts: tuple[str, ...], shown: Path) -> Iterator[int]:
    """A descriptor of the directory ``parts`` below the directory ``fd``, each step opened
    without following a link; closed on leaving.

    Raises:
        ValueError: a step is a link or not a directory (``shown``: its path, for the message).
    """
    current = os.dup(fd)
    try:
        for part in parts:
            step = _open_plain(part, _DIRECTORY, current, shown)
            os.close(current)
            current = step
        yield current
    finally:
        os.close(current)


def _read_file(fd: int, name: str, shown: Path, limit: int) -> bytes:
    """The bytes of the regular file ``name`` in the directory ``fd`` (at most ``limit``),
    opened without following a link and checked once open.

    Raises:
        ValueError: ``name`` is a link or not a regular file (``shown``: its path).
    """
    file = _open_plain(name, _FILE, fd, shown)
    with open(file, "rb", closefd=True) as stream:
        if not stat.S_ISREG(os.fstat(file).st_mode):
            raise ValueError(f"{shown}: {_REFUSED}")
        return stream.read(limit)


def _load_skill(
    fd: int,
    directory: Path,
    skill_path: str,
    max_resources: int,
    max_bytes: int,
    budget: list[int],
) -> LoadedSkill:
    """The skill in the directory ``fd`` (``directory``: its path, for messages)."""
    root_uri = f"skill://{skill_path}"
    files: list[SkillFileData] = []
    directories: dict[str, list[Resource]] = {}
    total = 0
    pending: list[tuple[tuple[str, ...], str]] = [((), root_uri)]
    while pending:
        parts, here_uri = pending.pop()
        children = directories[here_uri] = []
        with _directory(fd, parts, directory.joinpath(*parts)) as here:
            for name, mode in _entries(here):
                if name.startswith("."):
                    continue
                child = directory.joinpath(*parts, name)
                uri = f"{here_uri}/{segment(name)}"
                if stat.S_ISDIR(mode):  # opened without following a link when its turn comes
                    pending.append(((*parts, name), uri))
                    children.append(Resource(uri=uri, name=name, mimeType=DIRECTORY_MIME_TYPE))
                elif stat.S_ISREG(mode):
                    data = _read_file(here, name, child, min(max_bytes - total, budget[0]) + 1)
                    total += len(data)
                    budget[0] -= len(data)
                    if total > max_bytes or budget[0] < 0:
                        limit = "the skill" if total > max_bytes else "the folder"
                        raise ValueError(f"{child}: over the size limit of {limit}")
                    file = SkillFileData(uri=uri, name=name, mime_type=_mime_type(name), data=data)
                    files.append(file)
                    children.append(
                        Resource(uri=uri, name=name, mimeType=file.mime_type, size=len(data))
                    )
                else:
                    raise ValueError(f"{child}: {_REFUSED}")
                if len(files) > max_resources or len(directories) + len(pending) > max_resources:
                    raise ValueError(f"more than {max_resources} files or directories")
    manifest = next((f for f in files if f.uri == skill_uri(skill_path)), None)
    if manifest is None:
        raise ValueError(f"{SKILL_MD} is not a regular file any more")
    front_matter = _front_matter(manifest.data, directory.name)
    files.sort(key=lambda f: (f.uri != manifest.uri, f.uri))
    entry = SkillEntry(
        uri=manifest.uri,
        frontmatter=front_matter,
        resources=[SkillFile(uri=f.uri, digest=digest(f.data), size=len(f.data)) for f in files],
    )
    return LoadedSkill(entry=entry, files=files, directories=directories)


def _front_matter(data: bytes, name: str) -> dict[str, Any]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{SKILL_MD} is not UTF-8") from None
    yaml_text = front_matter_text(text)
    if yaml_text is None:
        raise ValueError(f"{SKILL_MD} does not begin with --- delimited YAML front matter")
    return check_front_matter(_parse_yaml(yaml_text), name)


def _parse_yaml(text: str) -> Any:
    """YAML parsed by PyYAML's safe loader, read as YAML 1.2's core schema reads it (what other
    hosts' parsers see): only ``true``/``false`` are booleans, and dates stay text.

    Raises:
        ValueError: not valid YAML.
    """
    loader = _core_loader()
    try:
        return loader(text).get_single_data()
    except Exception as exc:  # yaml.YAMLError, without importing yaml at module level
        raise ValueError(f"the front matter is not valid YAML: {exc}") from None


@functools.cache
def _core_loader() -> Callable[[str], Any]:
    try:
        import yaml
    except ImportError:
        raise ImportError("serving skills needs PyYAML (pip install pyyaml)") from None

    class CoreLoader(yaml.SafeLoader):
        pass

    dropped = {"tag:yaml.org,2002:bool", "tag:yaml.org,2002:timestamp"}
    CoreLoader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag not in dropped]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    CoreLoader.add_implicit_resolver(
        "tag:yaml.org,2002:bool",
        re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
        list("tTfF"),
    )
    return CoreLoader


def _mime_type(name: str) -> str:
    if name.endswith(".md"):
        return SKILL_MD_MIME_TYPE
    return mimetypes.guess_type(name)[0] or "application/octet-stream"


# ------------------------------------------------------------------------------ registering


def resources_of(skills: list[LoadedSkill]) -> Iterator[tuple[SkillFileData, str, str | None]]:
    """The files of ``skills`` to register as resources, each once, with a name and a
    description: each ``SKILL.md`` first, named and described by its front matter (as SEP-2640
    says it should be), then the other files, named as they are."""
    seen = set()
    for skill in skills:
        front_matter = skill.entry.frontmatter
        manifest = next(f for f in skill.files if f.uri == skill.entry.uri)
        seen.add(manifest.uri)
        yield manifest, front_matter["name"], front_matter["description"]
    for skill in skills:
        for file in skill.files:
            if file.uri not in seen:
                seen.add(file.uri)
                yield file, file.name, None


def reader(data: bytes) -> Callable[[], str | bytes]:
    """A resource function serving ``data``: as text when it is UTF-8 (and has no NUL), else
    as a blob."""
    try:
        text: str | None = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None

    def read() -> str | bytes:
        return data if text is None or "\x00" in text else text

    return read
