"""Which client address the per-address caps and the fair share see (``guard.client_of``, the scope's client) behind
a proxy, for the ``FORWARDED_ALLOW_IPS`` settings docs/deployment.md describes: uvicorn's own proxy-headers layer,
configured as Gradio's launch configures it (no ``forwarded_allow_ips`` given, so the variable decides)."""

import asyncio

import pytest
import uvicorn

from mrtpo_viz.serving.guard import client_of

PROXY = "10.1.2.3"
"""The proxy's own address, as the app's server sees the connection."""
FORGED_THEN_REAL = "6.6.6.6, 203.0.113.9"
"""A client that sent ``X-Forwarded-For: 6.6.6.6`` itself, through a proxy that appended the address it saw."""


def seen_address(monkeypatch, allow, peer: str, forwarded: str) -> str:
    if allow is None:
        monkeypatch.delenv("FORWARDED_ALLOW_IPS", raising=False)
    else:
        monkeypatch.setenv("FORWARDED_ALLOW_IPS", allow)
    seen = []

    async def app(scope, receive, send):
        seen.append(client_of(scope))

    config = uvicorn.Config(app=app, log_level="warning")
    config.load()
    scope = {
        "type": "http",
        "scheme": "http",
        "client": (peer, 50000),
        "headers": [(b"x-forwarded-for", forwarded.encode())],
    }
    asyncio.run(config.loaded_app(scope, None, None))
    return seen[0]


@pytest.mark.parametrize(
    "allow, peer, forwarded, address",
    [
        (None, PROXY, FORGED_THEN_REAL, PROXY),  # default (loopback only): every visitor is the proxy's one address
        (None, "127.0.0.1", "203.0.113.9", "203.0.113.9"),  # a proxy on the same machine is trusted by default
        ("10.0.0.0/8", PROXY, FORGED_THEN_REAL, "203.0.113.9"),  # the proxy's network: the address it appended
        ("10.0.0.0/8", "198.51.100.7", FORGED_THEN_REAL, "198.51.100.7"),  # a peer outside it: its header ignored
        ("*", PROXY, FORGED_THEN_REAL, "6.6.6.6"),  # everyone trusted: the leftmost entry, which a client writes
    ],
)
def test_the_client_address_behind_a_proxy(monkeypatch, allow, peer, forwarded, address):
    assert seen_address(monkeypatch, allow, peer, forwarded) == address
