"""The browser harness of the app's browser tests, once: the app launched in this process with a module's
environment (``app_env``, a fixture a module overrides), and a chromium page on it (``page``; its script errors
collect in ``page_errors``). A browser test module starts with ``sync_api = require_browser()`` (``tests.ui.harness``).
"""

import pytest

from mrtpo_viz.tasks.bundled_data import BUNDLED_POLICY_DIR
from tests.apphelpers import free_port, patient_url_ok
from tests.ui.harness import CHROMIUM, FLAGS, TIMEOUT_MS


@pytest.fixture(scope="module")
def checkpoint(request) -> str:
    """The bundled policy's folder (the tiny random policy where it is absent)."""
    bundled = BUNDLED_POLICY_DIR
    return str(bundled) if (bundled / "config.json").is_file() else str(request.getfixturevalue("tiny_policy_dir"))


@pytest.fixture(scope="module")
def app_env(checkpoint) -> dict:
    """The operator settings the app under test runs with (kept for the whole module: requests read them)."""
    return {"MRTPO_CHECKPOINT": checkpoint}  # what the page preselects


@pytest.fixture(scope="module")
def app_url(app_env):
    import torch

    from mrtpo_viz.ui import build_app, launch_options

    torch.set_num_threads(1)
    with pytest.MonkeyPatch.context() as mp:
        for name, value in app_env.items():
            mp.setenv(name, value)
        mp.setattr("gradio.networking.url_ok", patient_url_ok)
        demo = build_app()
        _, url, _ = demo.launch(prevent_thread_lock=True, server_port=free_port(), quiet=True, **launch_options())
        yield url
        demo.close()


@pytest.fixture(scope="module")
def page_errors() -> list:
    """Script errors of the page, in the order they happened."""
    return []


@pytest.fixture(scope="module")
def page(app_url, page_errors, tmp_path_factory):
    from playwright import sync_api

    with sync_api.sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=str(CHROMIUM),
            headless=True,
            args=FLAGS,
            viewport={"width": 1440, "height": 1000},
        )
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        page.on("pageerror", lambda e: page_errors.append(str(e)))
        page.goto(app_url, wait_until="domcontentloaded")
        yield page
        context.close()
