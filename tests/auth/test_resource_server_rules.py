"""The pure rules of `mcpfast.protocol.auth` (no I/O): the Authorization header, scopes, the
challenges, the well-known paths, URL comparison for DPoP, the metadata document."""

from __future__ import annotations

import pytest

from mcpfast.protocol import auth


def test_credentials() -> None:
    assert auth.credentials(None) is None
    assert auth.credentials("Basic abc") is None
    assert auth.credentials("bearer a.b-c_d~e+f/g==") == ("Bearer", "a.b-c_d~e+f/g==")
    assert auth.credentials("DPoP x") == ("DPoP", "x")
    assert not auth.is_token68('"x"')
    for bad in ("Bearer", "Bearer a b", "Bearer " + "a" * 8193):
        with pytest.raises(ValueError):
            auth.credentials(bad)


def test_scopes_and_hierarchy() -> None:
    assert auth.parse_scopes("b  a") == {"a", "b"}
    assert auth.parse_scopes(["a"]) == {"a"}
    with pytest.raises(ValueError):
        auth.parse_scopes('a "b')
    implies = {"all": ["files"], "files": ["files:read"]}
    assert auth.missing_scopes(frozenset({"all"}), ["files:read", "x"], implies) == {"x"}
    assert auth.scope_text({"b", "a"}) == "a b"


def test_challenges() -> None:
    refusal = auth.Refusal(403, "insufficient_scope", 'needs "write"', frozenset({"w", "r"}))
    bearer, dpop = auth.challenges(refusal, "https://m/.well-known/x", dpop_algs=["ES256"])
    assert bearer == (
        'Bearer error="insufficient_scope", error_description="needs \\"write\\"", '
        'scope="r w", resource_metadata="https://m/.well-known/x"'
    )
    assert dpop.startswith("DPoP error=") and dpop.endswith('algs="ES256"')
    missing = auth.Refusal(401, None, "no token", frozenset())
    assert auth.challenges(missing, "u") == ['Bearer resource_metadata="u"']


def test_well_known() -> None:
    assert auth.metadata_path("/mcp") == "/.well-known/oauth-protected-resource/mcp"
    assert auth.metadata_path("") == auth.metadata_path("/") == auth.WELL_KNOWN
    assert auth.metadata_url("https://a.test/public/mcp") == (
        "https://a.test/.well-known/oauth-protected-resource/public/mcp"
    )
    assert auth.canonical_resource("HTTPS://A.test/mcp/") == "https://a.test/mcp"
    with pytest.raises(ValueError):
        auth.canonical_resource("a.test/mcp")


def test_same_url() -> None:
    assert auth.same_url("https://A.test:443/mcp?x=1", "https://a.test/mcp")
    assert not auth.same_url("https://a.test/mcp", "http://a.test/mcp")
    assert not auth.same_url("https://a.test:8443/mcp", "https://a.test/mcp")
    assert not auth.same_url("https://a.test:bad/mcp", "https://a.test/mcp")


def test_metadata_document() -> None:
    doc = auth.resource_metadata(
        "https://a/mcp",
        ["https://as"],
        scopes_supported=["b", "a"],
        dpop_algs=["ES256"],
        dpop_bound_required=True,
    )
    assert doc == {
        "resource": "https://a/mcp",
        "authorization_servers": ["https://as"],
        "bearer_methods_supported": ["header"],
        "scopes_supported": ["a", "b"],
        "dpop_signing_alg_values_supported": ["ES256"],
        "dpop_bound_access_tokens_required": True,
    }
