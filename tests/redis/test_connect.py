"""The bus URLs of Sentinel and Cluster (`redis_connect`): what they name, and what is refused
before anything is opened."""

from __future__ import annotations

import pytest

from mcpfast.server.serve import bus_from_url
from mcpfast.server.state.redis_bus import RedisBus
from mcpfast.server.state.redis_connect import Nodes, connected


def test_a_sentinel_url_names_its_sentinels_credentials_service_and_db() -> None:
    nodes = Nodes("redis+sentinel://me:s%3Acret@h1:26379,[::1]:26380,h3:26381/mymaster/2")
    assert [(host.host, host.port) for host in nodes.hosts] == [
        ("h1", 26379),
        ("::1", 26380),
        ("h3", 26381),
    ]
    assert (nodes.username, nodes.password, nodes.path, nodes.tls) == (
        "me",
        "s:cret",
        "mymaster/2",
        False,
    )
    assert Nodes("rediss+cluster://:pw@h:7000").tls
    assert Nodes("rediss+cluster://:pw@h:7000").username is None


@pytest.mark.parametrize("url", ["redis+cluster://", "redis+cluster://host", "redis+cluster://h:x"])
def test_a_url_without_host_and_port_is_refused(url: str) -> None:
    with pytest.raises(ValueError):
        Nodes(url)


async def test_a_sentinel_url_without_a_service_is_refused() -> None:
    with pytest.raises(ValueError, match="names its service"):
        async with connected("redis+sentinel://127.0.0.1:26379", 1.0):
            pass


@pytest.mark.parametrize(
    "url", ["redis+sentinel://h:26379/mymaster", "redis+cluster://h:7000,h2:7000"]
)
def test_serve_takes_sentinel_and_cluster_urls(url: str) -> None:
    assert isinstance(bus_from_url(url), RedisBus)
