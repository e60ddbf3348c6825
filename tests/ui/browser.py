"""What the browser tests share: the app served in this process, a headless chromium page, and checks made in the
page (Gradio's error state, horizontal overflow, tabs that sit in the "More tabs" menu on a narrow screen).

Importing this module skips the importing test module when /usr/bin/chromium or playwright is missing, unless
MRTPO_REQUIRE_BROWSER=1 (CI), where that is a failure.
"""

import contextlib
from pathlib import Path

import pytest

from tests.apphelpers import free_port, patient_url_ok
from tests.ui.harness import CHROMIUM, FLAGS, TIMEOUT_MS, require_browser

sync_api = require_browser()


@contextlib.contextmanager
def served_app(**env):
    """The app on a free local port (its URL), with the given environment variables while it is built and runs."""
    import torch

    from mrtpo_viz.ui import build_app, launch_options

    torch.set_num_threads(1)
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        mp.setattr("gradio.networking.url_ok", patient_url_ok)
        demo = build_app()
        _, url, _ = demo.launch(prevent_thread_lock=True, server_port=free_port(), quiet=True, **launch_options())
        try:
            yield url
        finally:
            demo.close()


@contextlib.contextmanager
def browser_page(url: str, profile: Path, width: int = 1440, height: int = 1000):
    """A chromium page on ``url`` that records the console (``page.console``: (type, text)), uncaught script errors
    (``page.errors``) and every HTTP response of status >= 500 (``page.server_errors``: (status, url))."""
    with sync_api.sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(profile),
            executable_path=str(CHROMIUM),
            headless=True,
            args=FLAGS,
            viewport={"width": width, "height": height},
        )
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        page.console, page.errors, page.server_errors = [], [], []
        page.on("console", lambda m: page.console.append((m.type, m.text)))
        page.on("pageerror", lambda e: page.errors.append(str(e)))
        page.on("response", lambda r: page.server_errors.append((r.status, r.url)) if r.status >= 500 else None)
        page.goto(url, wait_until="domcontentloaded")
        page.locator("#replay-btn").wait_for()
        try:
            yield page
        finally:
            context.close()


def open_tab(page, name: str) -> None:
    """Click the tab ``name``; on a narrow screen Gradio moves the tabs that do not fit into a "More tabs" menu."""
    tab = page.locator("[role=tab]", has_text=name)
    if tab.count() and tab.first.is_visible():
        tab.first.click()
    else:
        page.get_by_role("button", name="More tabs").click()
        page.locator(".overflow-dropdown button", has_text=name).first.click()
    page.wait_for_function(
        "name => [...document.querySelectorAll('[role=tab][aria-selected=true]')]"
        ".some(t => t.innerText.trim() === name)",
        arg=name,
    )


def choose(page, label: str, option, tab=None) -> None:
    """Open the dropdown ``label`` (of the visible tab) and pick ``option`` (a string or a pattern)."""
    scope = page.locator(f"#{tab}") if tab else page
    scope.get_by_label(label).first.click()
    page.get_by_role("option", name=option, exact=isinstance(option, str)).first.click()


def wait_for_text(page, selector: str, pattern: str) -> str:
    """Wait until the element's text matches the regex; returns the text."""
    page.wait_for_function(
        "([sel, pat]) => { const e = document.querySelector(sel); return e && new RegExp(pat).test(e.innerText); }",
        arg=[selector, pattern],
    )
    return page.locator(selector).inner_text()


ERROR_STATE = """() => [...document.querySelectorAll('.error, [data-testid="error"], .toast-body.error')]
  .filter(e => e.offsetParent !== null).map(e => (e.closest('[id]') || e).id + ': ' + e.innerText.slice(0, 80))"""
"""The visible elements in Gradio's error state (an output's "Error" badge, an error toast)."""


def error_state(page) -> list[str]:
    return page.evaluate(ERROR_STATE)


OVERFLOW = """() => {
  const W = document.documentElement.clientWidth, out = [];
  const scrolls = (e) => { for (let p = e.parentElement; p && p !== document.body; p = p.parentElement) {
    const x = getComputedStyle(p).overflowX;
    if ((x === 'auto' || x === 'scroll' || x === 'hidden' || x === 'clip') && p.getBoundingClientRect().right <= W + 1)
      return true; } return false; };
  for (const e of document.querySelectorAll('body *')) {
    const b = e.getBoundingClientRect();
    if (b.width > 0 && b.height > 0 && b.right > W + 1 && !scrolls(e))
      out.push(`${e.tagName.toLowerCase()}#${e.id}.${String(e.className).split(' ')[0]} right=${Math.round(b.right)}`);
  }
  return {scrollWidth: document.documentElement.scrollWidth, width: W, over: out.slice(0, 10)};
}"""
"""Whether anything runs off the screen to the right, except inside an element that scrolls (or clips) sideways."""


def overflow(page) -> dict:
    return page.evaluate(OVERFLOW)


GRADIO_UPLOAD_WARNING = "Method not implemented."
"""Logged twice by Gradio's client after every file upload (gr.File): its upload-progress stream is a fetch-based
EventSource stand-in whose ``close()`` only warns this, and the progress bar closes it twice (on "done" and when it
is removed). Not the app's; the console checks leave this one message out."""


def app_console(page) -> list:
    """The console's errors and warnings, less :data:`GRADIO_UPLOAD_WARNING`."""
    return [m for m in page.console if m[0] in ("error", "warning") and m[1] != GRADIO_UPLOAD_WARNING]


def size(page, selector: str) -> dict:
    """The element's rendered width and height (CSS pixels)."""
    return page.locator(selector).first.evaluate(
        "e => { const b = e.getBoundingClientRect(); return {width: b.width, height: b.height}; }"
    )
