"""Helpers shared by the tests: launching the app (API, hostile UI, browser) and the checkout's root."""

import socket
from pathlib import Path
import time


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def patient_url_ok(url: str) -> bool:
    """Gradio's start-up check gives up after one 3 s request; on a loaded 2-core CI machine the first page can
    take longer, so wait up to a minute for it (patched in as ``gradio.networking.url_ok``)."""
    import httpx

    for _ in range(30):
        try:
            if httpx.head(url, timeout=30).status_code < 400:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(1.0)
    return False


REPO = Path(__file__).resolve().parent.parent
"""The repository checkout (for benchmarks/ and scripts/; package data is found through the package itself)."""
