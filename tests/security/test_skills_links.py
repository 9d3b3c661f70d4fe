"""Skills folders written by someone else (a shared workspace, an agent writing skills): files
outside the folder are never served, whether a link is there when the server loads the folder
or a directory is swapped for one while it loads (the race between looking at a directory and
reading through it)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2
import pytest

import mcpfast

from ..helpers import Wire, running

SECRET = b"outside-the-skills-folder"
LOADS = 100
"""Loads raced against the swapper (at most `RACE_SECONDS`)."""
RACE_SECONDS = 5.0


def write_skill(directory: Path, files: dict[str, bytes]) -> None:
    directory.mkdir(parents=True)
    name = directory.name
    text = f"---\nname: {name}\ndescription: The {name} skill.\n---\n\n# {name}\n"
    (directory / "SKILL.md").write_text(text)
    for relative, data in files.items():
        (directory / relative).parent.mkdir(parents=True, exist_ok=True)
        (directory / relative).write_bytes(data)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory beside the skills folder, holding what must never be served."""
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "notes.txt").write_bytes(SECRET)
    (secret / "SKILL.md").write_bytes(b"---\nname: sub\ndescription: " + SECRET + b"\n---\n")
    return secret


def served(server: mcpfast.Server) -> bytes:
    """Every byte the server's skills would serve (their files, as registered)."""
    catalog = server.skills
    assert catalog is not None
    return b"".join(
        str(resource).encode() for children in catalog.directories.values() for resource in children
    ) + b"".join(str(entry).encode() for entry in catalog.entries.values())


@contextmanager
def swapping(directory: Path, target: Path) -> Iterator[list[int]]:
    """Flip ``directory`` between itself and a link to ``target`` in a tight loop (a thread)
    until the block ends; yields the count of flips so far (one item)."""
    kept = directory.with_name("." + directory.name)  # a dot: not a skill's file
    stop = threading.Event()
    flips = [0]

    def flip() -> None:
        while not stop.is_set():
            os.rename(directory, kept)
            os.symlink(target, directory)
            time.sleep(0.001)  # a link for a while, as long as a directory: both get seen
            os.unlink(directory)
            os.rename(kept, directory)
            flips[0] += 1
            time.sleep(0.001)

    thread = threading.Thread(target=flip)
    thread.start()
    try:
        yield flips
    finally:
        stop.set()
        thread.join(timeout=10)
        assert not thread.is_alive()


def test_a_directory_swapped_for_a_link_while_loading_is_never_read_through(
    tmp_path: Path, outside: Path
) -> None:
    skills = tmp_path / "skills"
    # files listed after "sub" widen the window between looking at it and reading it
    fillers = {f"z{index:03}.txt": b"filler" for index in range(200)}
    write_skill(skills / "swapped", {"sub/notes.txt": b"inside", **fillers})
    loaded = refused = 0
    deadline = time.monotonic() + RACE_SECONDS
    with swapping(skills / "swapped" / "sub", outside) as flips:
        while loaded + refused < LOADS and time.monotonic() < deadline:
            server = mcpfast.Server("raced")
            try:
                server.skills_from(skills)
            except (ValueError, OSError):
                refused += 1  # caught mid-swap: refused, nothing served
                continue
            loaded += 1
            for uri, resource in server.resources.items():  # resources/read answers these
                data = resource.fn()
                assert SECRET not in (data if isinstance(data, bytes) else data.encode()), uri
            assert SECRET not in served(server)
    assert flips[0] > 0 and loaded + refused > 0


def test_a_link_at_load_is_refused(tmp_path: Path, outside: Path) -> None:
    skills = tmp_path / "skills"
    write_skill(skills / "linked", {"notes.txt": b"inside"})
    os.symlink(outside, skills / "linked" / "sub")
    with pytest.raises(ValueError, match="links are refused"):
        mcpfast.Server("linked").skills_from(skills)
    os.unlink(skills / "linked" / "sub")
    os.symlink(outside / "notes.txt", skills / "linked" / "copy.txt")
    with pytest.raises(ValueError, match="links are refused"):
        mcpfast.Server("linked").skills_from(skills)
    os.unlink(skills / "linked" / "copy.txt")
    os.mkfifo(skills / "linked" / "pipe")
    with pytest.raises(ValueError, match="not a regular file"):
        mcpfast.Server("linked").skills_from(skills)


async def test_a_skill_behind_a_link_is_not_served(
    tmp_path: Path, outside: Path, engine: str
) -> None:
    """A link to a skill outside the folder is not followed: the served folder holds only its
    own skill, read over HTTP."""
    skills = tmp_path / "skills"
    write_skill(skills / "own", {"notes.txt": b"inside"})
    os.symlink(outside, skills / "sub")
    server = mcpfast.Server("folder")
    server.skills_from(skills)
    async with running(server, engine=engine) as url, httpx2.AsyncClient(timeout=10) as http:
        wire = Wire(http, url)
        listed = await wire.modern("skills/list", {})
        uris = [entry["uri"] for entry in listed.result["skills"]]
        assert uris == ["skill://own/SKILL.md"]
        bad = await wire.modern("resources/read", {"uri": "skill://sub/notes.txt"})
        assert "error" in bad.message and SECRET not in bad.response.content
