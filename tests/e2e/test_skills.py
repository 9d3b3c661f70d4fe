"""Skills (SEP-2640) through real servers on both engines and the real client, in both eras:
`Client.list_skills` across pages (no entry split), `get_skill`, `read_directory`, the digests
and sizes against the files on disk, unknown and traversing URIs refused, and the client
refusing to send what the server did not declare."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

import mcpfast
from mcpfast import MCPError, Server

from ..helpers import running

DEMO_SKILLS = Path(mcpfast.__file__).parent / "demo_skills"
ENGINES = pytest.mark.parametrize("engine", ["hypercorn", "native"])
ERAS = pytest.mark.parametrize("era", ["modern", "legacy"])


def skills_server(**kw: Any) -> Server:
    server = Server("skills", "1", page_size=2)
    server.skills_from(DEMO_SKILLS, **kw)
    return server


@ENGINES
@ERAS
async def test_list_get_and_read_match_the_files(engine: str, era: Any) -> None:
    async with (
        running(skills_server(), engine=engine) as url,
        mcpfast.connect(url, era) as client,
    ):
        skills = await client.list_skills()
        pdf = await client.get_skill("skill://pdf-processing/SKILL.md")
        root = await client.read_directory("skill://pdf-processing")
        templates = await client.read_directory("skill://pdf-processing/templates")
        files = pdf.resources
        assert not isinstance(files, str)
        contents = {f.uri: await client.read_resource(f.uri) for f in files}
    # three skills over two pages of two: each whole, once
    assert [s.uri for s in skills] == [
        "skill://acme/billing/refunds/SKILL.md",
        "skill://git-workflow/SKILL.md",
        "skill://pdf-processing/SKILL.md",
    ]
    assert pdf == skills[2]
    assert pdf.frontmatter["name"] == "pdf-processing"
    on_disk = {
        "skill://pdf-processing/" + "/".join(p.relative_to(DEMO_SKILLS / "pdf-processing").parts): (
            p.read_bytes()
        )
        for p in (DEMO_SKILLS / "pdf-processing").rglob("*")
        if p.is_file()
    }
    assert {f.uri: (f.digest, f.size) for f in files} == {
        uri: ("sha256:" + hashlib.sha256(data).hexdigest(), len(data))
        for uri, data in on_disk.items()
    }
    for uri, result in contents.items():  # what a read returns is what the digest covers
        assert (result.contents[0].text or "").encode() == on_disk[uri]
    kinds = {r.name: r.mimeType for r in root}
    assert kinds == {
        "SKILL.md": "text/markdown",
        "references": "inode/directory",
        "scripts": "inode/directory",
        "templates": "inode/directory",
    }
    assert [(r.name, r.mimeType) for r in templates] == [
        ("invoice.md", "text/markdown"),
        ("regional", "inode/directory"),
    ]


@ENGINES
@ERAS
async def test_unknown_and_traversing_uris_are_invalid_params(engine: str, era: Any) -> None:
    async with (
        running(skills_server(), engine=engine) as url,
        mcpfast.connect(url, era) as client,
    ):
        for call, uri in [
            (client.get_skill, "skill://mcp-nonexistent/SKILL.md"),
            (client.get_skill, "skill://pdf-processing/references/FORMS.md"),
            (client.read_directory, "skill://pdf-processing/SKILL.md"),
            (client.read_directory, "skill://pdf-processing/../git-workflow"),
            (client.read_directory, "skill://pdf-processing/templates/../../.."),
        ]:
            with pytest.raises(MCPError) as info:
                await call(uri)
            assert info.value.code == -32602, uri
            assert info.value.data == {"uri": uri}


@ENGINES
async def test_the_client_sends_only_what_the_server_declared(engine: str) -> None:
    async with (
        running(skills_server(directory_read=False), engine=engine) as url,
        mcpfast.connect(url, "modern") as client,
    ):
        assert len(await client.list_skills()) == 3
        with pytest.raises(MCPError, match="directoryRead: true") as info:
            await client.read_directory("skill://git-workflow")
        assert info.value.code == -32601
    async with (
        running(Server("plain", "1"), engine=engine) as url,
        mcpfast.connect(url, "legacy") as client,
    ):
        with pytest.raises(MCPError, match="was not sent") as info:
            await client.list_skills()
        assert info.value.code == -32601
