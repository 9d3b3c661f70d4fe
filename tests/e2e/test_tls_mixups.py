"""The client names a TLS / plain-HTTP mixup: ``https://`` to a plain-HTTP server (the real
one, either engine) and ``http://`` to a TLS server (a small TLS listener here, with a
self-signed certificate made by ``cryptography``), in every era."""

from __future__ import annotations

import datetime
import ssl
from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path

import pytest
import trio

import mcpfast
from mcpfast.client import EraCache
from mcpfast.client.connect import EraChoice
from mcpfast.client.http import PLAIN_HTTP, SPEAKS_TLS

ERAS: list[EraChoice] = ["auto", "modern", "legacy"]


@pytest.mark.parametrize("era", ERAS)
async def test_https_to_plain_http_says_use_http(demo_url: str, era: EraChoice) -> None:
    url = demo_url.replace("http://", "https://")
    with trio.fail_after(10), pytest.raises(mcpfast.TransportError) as failed:
        async with mcpfast.connect(url, era, era_cache=EraCache()) as client:
            await client.list_tools()
    assert PLAIN_HTTP in str(failed.value)
    assert str(failed.value) == f"cannot reach {url}: the server speaks plain HTTP, use http://"


def self_signed(directory: Path) -> ssl.SSLContext:
    """A server context with a fresh self-signed certificate for localhost."""
    pytest.importorskip("cryptography", reason="a certificate is made with cryptography")
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / "cert.pem", directory / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    return context


@pytest.fixture
async def tls_url(tmp_path: Path) -> AsyncIterator[str]:
    """A TLS listener that completes handshakes and then closes (a plain request it cannot
    read: it closes without a word, as Python's and OpenSSL's servers do)."""
    context = self_signed(tmp_path)

    async def handle(stream: trio.SSLStream[trio.SocketStream]) -> None:
        try:
            await stream.do_handshake()
        except trio.BrokenResourceError:
            pass
        await trio.aclose_forcefully(stream)

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            partial(trio.serve_ssl_over_tcp, handle, 0, context, host="127.0.0.1")
        )
        port = listeners[0].transport_listener.socket.getsockname()[1]
        yield f"http://127.0.0.1:{port}/mcp"
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("era", ERAS)
async def test_http_to_tls_says_use_https(tls_url: str, era: EraChoice) -> None:
    with trio.fail_after(10), pytest.raises(mcpfast.TransportError) as failed:
        async with mcpfast.connect(tls_url, era, era_cache=EraCache()) as client:
            await client.list_tools()
    assert str(failed.value) == f"cannot reach {tls_url}: {SPEAKS_TLS}"
