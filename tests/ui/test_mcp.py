"""MRTPO_MCP: with it on, the app serves /token_relevance and /score_response as MCP tools (Gradio's MCP server), an
MCP client lists exactly those two and calls one; with it off there is no MCP server at all."""

import asyncio

import httpx
import pytest

from tests.apphelpers import free_port, patient_url_ok

mcp = pytest.importorskip("mcp", reason="the mcp package (requirements-dev.txt) serves and lists MCP tools")


def _launch(monkeypatch, on: bool):
    from mrtpo_viz.ui import build_app, launch_options

    monkeypatch.setenv("MRTPO_MCP", "1" if on else "0")
    monkeypatch.setattr("gradio.networking.url_ok", patient_url_ok)
    demo = build_app()
    _, url, _ = demo.launch(prevent_thread_lock=True, server_port=free_port(), quiet=True, **launch_options())
    return demo, url


async def _tools_and_a_call(url: str):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    async with streamablehttp_client(url + "gradio_api/mcp/") as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
            result = await session.call_tool(
                "score_response",
                {
                    "response": "the sea is calm",
                    "verifiers": ["ifeval.lowercase"],
                    "task": "instruction_following",
                    "example": -1,
                },
            )
            return tools, result


# Gradio warns about every named endpoint with a gr.State input, tools or not; the tabs' endpoints are not tools
@pytest.mark.filterwarnings("ignore:This MCP server includes a tool that has a gr.State input")
def test_mcp_on_lists_the_two_tools_and_answers(monkeypatch):
    demo, url = _launch(monkeypatch, on=True)
    try:
        tools, result = asyncio.run(_tools_and_a_call(url))
    finally:
        demo.close()
    by_name = {t.name: t for t in tools}
    assert set(by_name) == {"token_relevance", "score_response"}  # not the tabs' endpoints
    assert by_name["token_relevance"].description.startswith("Which tokens of a response each verifier's reward")
    schema = by_name["token_relevance"].inputSchema
    assert {"response", "verifiers"} <= set(schema["required"]) and "arguments" in schema["properties"]
    import json

    answer = json.loads(result.content[0].text)  # JSON text, not a Python repr
    # a free prompt, scored
    reason = "all lowercase; detected language 'en', need 'en'"
    assert answer == {"ifeval.lowercase": {"reward": 1, "reason": reason}}


def test_mcp_off_serves_no_mcp(monkeypatch):
    demo, url = _launch(monkeypatch, on=False)
    try:
        assert httpx.get(url + "gradio_api/mcp/schema", timeout=30).status_code == 404
        assert httpx.get(url + "config", timeout=30).json().get("mcp_server") is False
    finally:
        demo.close()


def test_mcp_on_without_the_package_stops_with_a_message(monkeypatch):
    import importlib.util

    from mrtpo_viz.settings import SettingsError
    from mrtpo_viz.ui import launch_options

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mcp" else real(name, *a))
    monkeypatch.setenv("MRTPO_MCP", "1")
    with pytest.raises(SettingsError, match=r"MRTPO_MCP=1 needs the mcp package \(pip install mcp\)"):
        launch_options()
    monkeypatch.setenv("MRTPO_MCP", "0")
    assert launch_options()["mcp_server"] is False and launch_options()["run_history"] is False
