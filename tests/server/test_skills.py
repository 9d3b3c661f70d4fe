"""Skills (SEP-2640) at the `Endpoint`: a folder read into skill entries (digests, sizes, what is
refused), and ``skills/list``, ``skills/get`` and ``resources/directory/read`` in both eras."""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from mcpfast import Server
from mcpfast.protocol.skills import SKILLS_EXTENSION, SkillEntry, SkillFile
from mcpfast.server.framework.skills import load_folder

from .conftest import Wire, serving

LEGACY = "2025-11-25"
BINARY = bytes(range(256))


def write_skill(
    root: Path, path: str, front: str | None = None, files: dict[str, bytes] | None = None
) -> Path:
    """A skill directory ``root/path`` with a ``SKILL.md`` (front matter ``front``, else a
    valid one named after the directory) and ``files`` (by path in the skill)."""
    directory = root / path
    directory.mkdir(parents=True)
    name = directory.name
    if front is None:
        front = f"name: {name}\ndescription: The {name} skill."
    (directory / "SKILL.md").write_text(f"---\n{front}\n---\n\n# {name}\n", encoding="utf-8")
    for relative, data in (files or {}).items():
        target = directory / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return directory


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    write_skill(
        tmp_path,
        "pdf",
        "name: pdf\ndescription: PDFs.\nmetadata:\n  version: '2'\n  when: 2024-01-01\n  ok: yes",
        {
            "templates/invoice.md": b"# Invoice\n",
            "templates/regional/eu.md": b"# EU\n",
            "scripts/tool.bin": BINARY,
        },
    )
    write_skill(tmp_path, "acme/billing/refunds", files={"examples/email.md": b"Hello\n"})
    write_skill(tmp_path, "zeta")
    return tmp_path


def skills_server(folder: Path, **kw: Any) -> Server:
    server = Server("skills", "1", page_size=kw.pop("page_size", 100), cache_ttl_ms=1000)
    server.skills_from(folder, **kw)
    return server


def triples(entry: SkillEntry) -> list[SkillFile]:
    """The entry's ``{uri, digest, size}`` triples (not ``"dynamic"``)."""
    assert not isinstance(entry.resources, str)
    return entry.resources


def files_of(directory: Path) -> dict[str, bytes]:
    return {
        "/".join(p.relative_to(directory).parts): p.read_bytes()
        for p in directory.rglob("*")
        if p.is_file()
    }


# -------------------------------------------------------------------------------- the folder


def test_entries_carry_every_file_with_its_digest_and_size(folder: Path) -> None:
    skills = load_folder(folder)
    assert [s.entry.uri for s in skills] == [
        "skill://acme/billing/refunds/SKILL.md",
        "skill://pdf/SKILL.md",
        "skill://zeta/SKILL.md",
    ]
    pdf = skills[1].entry
    assert pdf.frontmatter == {
        "name": "pdf",
        "description": "PDFs.",
        # YAML 1.2's core schema, as other hosts read it: dates and "yes" stay text
        "metadata": {"version": "2", "when": "2024-01-01", "ok": "yes"},
    }
    assert triples(pdf)[0].uri == pdf.uri  # SKILL.md first
    on_disk = files_of(folder / "pdf")
    assert {r.uri.removeprefix("skill://pdf/"): (r.digest, r.size) for r in triples(pdf)} == {
        name: ("sha256:" + hashlib.sha256(data).hexdigest(), len(data))
        for name, data in on_disk.items()
    }


def test_the_folder_itself_may_be_the_skill(tmp_path: Path) -> None:
    directory = write_skill(tmp_path, "solo")
    (skill,) = load_folder(directory)
    assert skill.entry.uri == "skill://solo/SKILL.md"


def test_hidden_files_are_not_served(tmp_path: Path) -> None:
    write_skill(tmp_path, "one", files={".secret": b"x"})
    (tmp_path / "one" / ".git").mkdir()
    (tmp_path / "one" / ".git" / "config").write_bytes(b"x")
    (skill,) = load_folder(tmp_path)
    assert [r.uri for r in triples(skill.entry)] == ["skill://one/SKILL.md"]


def test_a_nested_skill_is_also_a_file_of_the_enclosing_one(tmp_path: Path) -> None:
    write_skill(tmp_path, "outer")
    write_skill(tmp_path, "outer/inner")
    outer, inner = load_folder(tmp_path)
    assert inner.entry.uri == "skill://outer/inner/SKILL.md"
    assert inner.entry.uri in {r.uri for r in triples(outer.entry)}
    server = Server("nested", "1")
    server.skills_from(tmp_path)
    assert server.resources[inner.entry.uri].definition.name == "inner"


@pytest.mark.parametrize(
    ("front", "reason"),
    [
        ("name: other\ndescription: d", "not the skill directory's name"),
        ("name: Bad--Name\ndescription: d", "lowercase"),
        ("name: bad\n", "description"),
        ("name: bad\ndescription: ''", "description"),
        ("- a list", "not a mapping"),
        ("name: [unclosed", "not valid YAML"),
        ("name: bad\ndescription: d\n1: numeric key", "not a string"),
    ],
)
def test_a_bad_front_matter_is_refused(tmp_path: Path, front: str, reason: str) -> None:
    write_skill(tmp_path, "bad", front)
    with pytest.raises(ValueError, match=reason):
        load_folder(tmp_path)


def test_a_skill_md_without_front_matter_is_refused(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "SKILL.md").write_text("# no front matter\n")
    with pytest.raises(ValueError, match="front matter"):
        load_folder(tmp_path)


def test_links_are_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    skill = write_skill(tmp_path / "skills", "linked")
    os.symlink(outside, skill / "escape.txt")
    with pytest.raises(ValueError, match="links are refused"):
        load_folder(tmp_path / "skills")


def test_the_limits_are_enforced(tmp_path: Path) -> None:
    write_skill(tmp_path, "big", files={"a": b"12345", "b": b"12345"})
    with pytest.raises(ValueError, match="more than 2 files"):
        load_folder(tmp_path, max_resources=2)
    with pytest.raises(ValueError, match="size limit of the skill"):
        load_folder(tmp_path, max_skill_bytes=20)
    with pytest.raises(ValueError, match="size limit of the folder"):
        load_folder(tmp_path, max_folder_bytes=20)


def test_a_skill_cannot_be_served_twice(folder: Path) -> None:
    server = skills_server(folder)
    with pytest.raises(ValueError, match="already served"):
        server.skills_from(folder)


def test_the_extension_is_declared_inline_in_both_eras(folder: Path) -> None:
    server = skills_server(folder)
    for version in ("2026-07-28", LEGACY, "2025-03-26"):
        caps = server.capabilities(version)
        assert caps["extensions"][SKILLS_EXTENSION] == {"directoryRead": True}
        assert "resources" in caps  # SEP-2640: a skills server declares resources
    assert skills_server(folder, directory_read=False).capabilities(LEGACY)["extensions"] == {
        SKILLS_EXTENSION: {}
    }


# ---------------------------------------------------------------------------------- methods


async def all_pages(wire: Wire, method: str, key: str, **params: Any) -> list[list[Any]]:
    pages: list[list[Any]] = []
    cursor = None
    while True:
        reply = await wire.modern(method, {**params, **({"cursor": cursor} if cursor else {})})
        pages.append(reply.result[key])
        cursor = reply.result.get("nextCursor")
        if cursor is None:
            return pages


async def test_skills_list_pages_whole_entries(folder: Path) -> None:
    server = skills_server(folder, page_size=2)
    async with serving(server) as wire:
        pages = await all_pages(wire, "skills/list", "skills")
        first = await wire.modern("skills/list")
    assert [len(p) for p in pages] == [2, 1]
    entries = [e for page in pages for e in page]
    assert [e["uri"] for e in entries] == list(server.skills.entries)  # type: ignore[union-attr]
    for entry in entries:  # each whole on its page: every file, SKILL.md included
        skill = server.skills.entries[entry["uri"]]  # type: ignore[union-attr]
        assert len(entry["resources"]) == len(triples(skill))
    assert first.result["ttlMs"] == 1000 and first.result["cacheScope"] == "public"
    assert first.result["resultType"] == "complete"


async def test_a_forged_cursor_is_invalid_params(folder: Path) -> None:
    async with serving(skills_server(folder)) as wire:
        reply = await wire.modern("skills/list", {"cursor": "not-a-cursor"})
    assert reply.error["code"] == -32602


async def test_skills_get_answers_one_entry_or_invalid_params(folder: Path) -> None:
    server = skills_server(folder)
    async with serving(server) as wire:
        got = await wire.modern("skills/get", {"uri": "skill://pdf/SKILL.md"})
        listed = (await wire.modern("skills/list")).result["skills"]
        unknown = await wire.modern("skills/get", {"uri": "skill://nope/SKILL.md"})
    assert got.result["skill"] == next(e for e in listed if e["uri"] == "skill://pdf/SKILL.md")
    assert "nextCursor" not in got.result and got.result["ttlMs"] == 1000
    assert unknown.error["code"] == -32602
    assert unknown.error["data"] == {"uri": "skill://nope/SKILL.md"}


async def test_directory_read_lists_direct_children(folder: Path) -> None:
    async with serving(skills_server(folder, page_size=2)) as wire:
        root = await all_pages(wire, "resources/directory/read", "resources", uri="skill://pdf")
        templates = await wire.modern("resources/directory/read", {"uri": "skill://pdf/templates"})
    children = {c["uri"]: c for page in root for c in page}
    assert [len(p) for p in root] == [2, 1]
    assert children["skill://pdf/SKILL.md"]["mimeType"] == "text/markdown"
    assert children["skill://pdf/templates"]["mimeType"] == "inode/directory"
    assert children["skill://pdf/scripts"]["mimeType"] == "inode/directory"
    assert [(c["name"], c.get("size")) for c in templates.result["resources"]] == [
        ("invoice.md", 10),
        ("regional", None),
    ]


@pytest.mark.parametrize(
    "uri",
    [
        "skill://pdf/SKILL.md",  # a file, not a directory
        "skill://pdf/",  # directories are written without a trailing slash
        "skill://pdf/../zeta",
        "skill://pdf/templates/../../../etc",
        "skill://nope",
    ],
)
async def test_directory_read_of_anything_else_is_invalid_params(folder: Path, uri: str) -> None:
    async with serving(skills_server(folder)) as wire:
        reply = await wire.modern("resources/directory/read", {"uri": uri})
    assert reply.error["code"] == -32602 and reply.error["data"] == {"uri": uri}


async def test_a_file_reads_as_the_bytes_its_digest_covers(folder: Path) -> None:
    server = skills_server(folder)
    entry = server.skills.entries["skill://pdf/SKILL.md"]  # type: ignore[union-attr]
    digests = {r.uri: r.digest for r in triples(entry)}
    async with serving(server) as wire:
        text = await wire.modern("resources/read", {"uri": "skill://pdf/SKILL.md"})
        blob = await wire.modern("resources/read", {"uri": "skill://pdf/scripts/tool.bin"})
        escape = await wire.modern("resources/read", {"uri": "skill://pdf/../../etc/passwd"})
    manifest = text.result["contents"][0]
    assert manifest["mimeType"] == "text/markdown"
    sha = "sha256:" + hashlib.sha256(manifest["text"].encode()).hexdigest()
    assert sha == digests["skill://pdf/SKILL.md"]
    assert base64.b64decode(blob.result["contents"][0]["blob"]) == BINARY
    assert escape.error["code"] == -32602


async def test_without_the_extension_the_methods_are_not_found() -> None:
    async with serving(Server("plain", "1")) as wire:
        for method, params in [
            ("skills/list", {}),
            ("skills/get", {"uri": "skill://x/SKILL.md"}),
            ("resources/directory/read", {"uri": "skill://x"}),
        ]:
            reply = await wire.modern(method, params)
            assert reply.error["code"] == -32601, method


async def test_directory_read_needs_directory_read(folder: Path) -> None:
    async with serving(skills_server(folder, directory_read=False)) as wire:
        listed = await wire.modern("skills/list")
        directory = await wire.modern("resources/directory/read", {"uri": "skill://pdf"})
    assert len(listed.result["skills"]) == 3
    assert directory.error["code"] == -32601


async def test_the_legacy_era_serves_skills_too(folder: Path) -> None:
    async with serving(skills_server(folder, page_size=2)) as wire:
        session, init = await wire.initialize(LEGACY)
        extensions = init.result["capabilities"]["extensions"]
        first = await wire.legacy("skills/list", {}, session=session, version=LEGACY)
        got = await wire.legacy(
            "skills/get", {"uri": "skill://zeta/SKILL.md"}, session=session, version=LEGACY
        )
        unknown = await wire.legacy(
            "skills/get", {"uri": "skill://x/SKILL.md"}, session=session, version=LEGACY
        )
        directory = await wire.legacy(
            "resources/directory/read", {"uri": "skill://zeta"}, session=session, version=LEGACY
        )
    assert extensions[SKILLS_EXTENSION] == {"directoryRead": True}
    assert len(first.result["skills"]) == 2 and "nextCursor" in first.result
    assert "ttlMs" not in first.result  # cache hints are 2026-07-28's
    assert got.result["skill"]["frontmatter"]["name"] == "zeta"
    assert unknown.error["code"] == -32602
    assert [c["name"] for c in directory.result["resources"]] == ["SKILL.md"]
