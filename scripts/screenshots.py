"""Take the README's screenshots of the app on the bundled policy (Debian chromium through playwright):

    python scripts/screenshots.py            # writes assets/screenshot_{relevance,free_prompt,ab,ab_split,rollouts,
                                             # method}.png, and screenshot_smollm2{,_ab}.png where that model is
                                             # downloaded
    python scripts/screenshots.py --out DIR  # somewhere else
    python scripts/screenshots.py --width 390 --height 844 --no-real   # a phone: screenshot_*_390.png, each
                                             # from the top of the tab's results (the inputs come first there)

The app runs in this process on a free local port. Each shot is a state a user reaches by clicking: a replay with a
pinned token, a free SQL prompt with its verifier's fields filled, an A/B comparison, a scored rollouts file. The
test suite takes no screenshots (a test run never rewrites a tracked file).
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TIMEOUT_MS = 300_000
WIDTH = 1400
"""The viewport's width (``--width``); below :data:`NARROW` the shots start at the tab's results and their names
end in ``_<width>``."""
NARROW = 600


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def choose(page, label: str, option) -> None:
    page.get_by_label(label).first.click()
    page.get_by_role("option", name=option, exact=isinstance(option, str)).first.click()


def named(path: Path) -> Path:
    """``screenshot_x.png``, or ``screenshot_x_390.png`` on a narrow screen."""
    return path if WIDTH >= NARROW else path.with_name(f"{path.stem}_{WIDTH}{path.suffix}")


def open_tab(page, name: str) -> None:
    """Click a tab; on a narrow screen Gradio puts the tabs that do not fit into a "More tabs" menu."""
    tab = page.locator("[role=tab]", has_text=name)
    if tab.count() and tab.first.is_visible():
        tab.first.click()
    else:
        page.get_by_role("button", name="More tabs").click()
        page.locator(".overflow-dropdown button", has_text=name).first.click()


def shot(page, path: Path, height: int, anchor: str | None = None) -> None:
    """The top ``height`` pixels of the page (the states shown are taller than one screen); on a narrow screen the
    ``height`` pixels from ``anchor`` (the tab's results, below its inputs)."""
    page.wait_for_timeout(800)  # plotly's transitions and the token view's paint
    top = 0
    if WIDTH < NARROW and anchor:
        box = page.locator(anchor).first.bounding_box()
        top = max(0, box["y"] + page.evaluate("window.scrollY") - 10)
    path = named(path)
    page.screenshot(path=str(path), clip={"x": 0, "y": top, "width": WIDTH, "height": height}, full_page=True)
    print(f"wrote {path} ({path.stat().st_size // 1024} KB)")


def most_relevant(task: str, index: int, row: int) -> int:
    """The position of the example's reference token most relevant to its verifier ``row`` (the one to pin)."""
    from mrtpo_viz.relevance import replay
    from mrtpo_viz.ui.example_picker import get_example
    from mrtpo_viz.ui.policy_choice import get_policy

    ex = get_example(task, index)
    rel = replay(get_policy("tiny-mrtpo"), ex, ex.reference, list(ex.verifiers))
    return int(rel.scores[row].argmax())


def relevance(page, out: Path) -> None:
    """Tool calling, example 1: replayed, the most relevant token of the correctness row pinned."""
    from mrtpo_viz.ui.example_picker import get_example

    choose(page, "Example (test split)", re.compile(r"^1:"))
    from mrtpo_viz.tasks import get_verifier

    ex = get_example("tool_calling", 1)
    page.wait_for_function("ref => document.querySelector('#response-box textarea').value === ref", arg=ex.reference)
    info = get_verifier("tool_call.correctness").info(ex)  # the information boxes follow the example
    page.wait_for_function("info => [...document.querySelectorAll('textarea')].some(t => t.value === info)", arg=info)
    page.locator("#replay-btn").click()
    page.locator("#advantage-bars .barlayer path").first.wait_for()
    t = most_relevant("tool_calling", 1, row=1)
    page.locator(f"#relevance-tokens .tv-tok[data-k='1'][data-t='{t}']").click()
    shot(page, out / "screenshot_relevance.png", 1500, "#relevance-status")


def free_prompt(page, out: Path) -> None:
    """Text to SQL, a free prompt: the database and gold query typed into sql.execution's fields, replayed."""
    choose(page, "Task family", "text_to_sql")
    page.wait_for_timeout(1500)
    choose(page, "Example (test split)", re.compile(r"^free prompt"))
    page.wait_for_function("() => document.querySelector('#prompt-box textarea').value === ''")
    page.locator("#prompt-box textarea").fill("Which products cost more than 20? Give their names.")
    page.locator("#response-box textarea").fill("```sql\nSELECT name FROM products WHERE price > 20\n```")
    for name in ("sql.format", "sql.execution"):
        page.locator("#verifier-choice").get_by_label(name, exact=True).check()
        page.wait_for_timeout(1000)
    page.get_by_label("sql.execution: database").fill("shop")
    gold = page.get_by_label("sql.execution: gold SQL")
    gold.fill("SELECT name FROM products WHERE price > 20")
    gold.press("Enter")  # the information follows the fields
    page.wait_for_function(
        "() => [...document.querySelectorAll('textarea')].some(t => t.value.includes('runs on the shop database'))"
    )
    page.locator("#replay-btn").click()
    page.locator("#relevance-heatmap .heatmaplayer").wait_for()
    page.locator("#relevance-tokens .tv-tok[data-k='1'][data-t='8']").click()
    shot(page, out / "screenshot_free_prompt.png", 1700, "#relevance-status")  # down to the gold SQL field


def ab(page, out: Path) -> None:
    open_tab(page, "Verifier information A/B")
    page.locator("#ab-btn").click()
    page.locator("#ab-diff .heatmaplayer").first.wait_for()
    t = most_relevant("tool_calling", 0, row=0)
    page.locator(f"#ab-tokens-a .tv-tok[data-k='0'][data-t='{t}']").click()  # B pins the same token
    shot(page, out / "screenshot_ab.png", 1250, "#ab-status")


def ab_split(page, out: Path) -> None:
    """The A/B tab's comparison over the first 20 tool-calling examples (A: each example's own information, B: the
    verifier's description), the worst case for B opened in the single view above."""
    open_tab(page, "Verifier information A/B")
    page.locator("#ab-split-btn").click()
    page.wait_for_function("() => /^\\d+ \\/ \\d+ cases of/.test(document.querySelector('#ab-split-status').innerText)")
    page.locator("#ab-split-plot .barlayer path").first.wait_for()
    page.locator("#ab-split").scroll_into_view_if_needed()
    box = page.locator("#ab-split").bounding_box()
    top = box["y"] + page.evaluate("window.scrollY")
    path = named(out / "screenshot_ab_split.png")
    page.wait_for_timeout(800)
    page.screenshot(
        path=str(path),
        full_page=True,
        clip={"x": 0, "y": max(top - 10, 0), "width": WIDTH, "height": min(box["height"] + 20, 1500)},
    )
    print(f"wrote {path}")


def rollouts(page, out: Path) -> None:
    open_tab(page, "Rollouts")
    page.locator("#rollouts-btn").click()
    page.locator("#rollout-tokens .tv-tok").first.wait_for()
    page.locator("#rollout-tokens .tv-tok[data-k='1'][data-t='21']").click()
    shot(page, out / "screenshot_rollouts.png", 1250, "#rollouts-status")


def method(page, out: Path) -> None:
    """The Method tab's summary of the convergence study (benchmarks/results/convergence.json) and its plot."""
    open_tab(page, "Method")
    plot = page.locator("#study-plot .main-svg")
    plot.first.wait_for()
    plot.first.scroll_into_view_if_needed()
    page.wait_for_timeout(800)
    box = page.locator("#study-plot").bounding_box()  # in the viewport: add the scroll for page coordinates
    top = box["y"] + page.evaluate("window.scrollY")
    path = named(out / "screenshot_method.png")
    page.screenshot(
        path=str(path),
        full_page=True,
        clip={"x": 0, "y": max(top - 560, 0), "width": WIDTH, "height": box["height"] + 600},
    )
    print(f"wrote {path}")


REAL_MODEL = "smollm2-135m-instruct"


def real_model(page, out: Path) -> None:
    """SmolLM2-135M-Instruct (``python -m mrtpo_viz get-model smollm2-135m-instruct``): a free instruction-following
    prompt, the model's own sampled response (seed 0), replayed with two IFEval constraints, a token pinned."""
    open_tab(page, "Token relevance")
    box = page.get_by_label(re.compile(r"^Checkpoint"))
    box.fill(REAL_MODEL)
    box.press("Enter")
    page.get_by_role("button", name="Load", exact=True).click()
    page.wait_for_function("() => document.body.innerText.includes('Loaded')")
    choose(page, "Task family", "instruction_following")
    page.wait_for_timeout(1500)
    choose(page, "Example (test split)", re.compile(r"^free prompt"))
    page.wait_for_function("() => document.querySelector('#prompt-box textarea').value === ''")
    page.locator("#prompt-box textarea").fill(
        "Describe the sea in two short sentences. Use only lowercase letters and no commas."
    )
    page.locator("#generate-btn").click()
    page.wait_for_function("() => document.querySelector('#response-box textarea').value.length > 10")
    page.wait_for_function("() => !document.querySelector('#replay-btn').disabled")
    for name in ("ifeval.lowercase", "ifeval.no_comma"):
        page.locator("#verifier-choice").get_by_label(name, exact=True).check()
        page.wait_for_timeout(1000)
    page.locator("#replay-btn").click()
    page.locator("#relevance-heatmap .heatmaplayer").wait_for()
    page.locator("#relevance-tokens .tv-tok[data-k='0'][data-t='2']").click()
    shot(page, out / "screenshot_smollm2.png", 1500, "#relevance-status")


def real_model_ab(page, out: Path) -> None:
    """SmolLM2-135M-Instruct in the A/B tab (after :func:`real_model` switched the checkpoint): held-out
    instruction-following example 2's gold response, ``ifeval.ends_with`` with its own information (A) against
    its generic description (B); ``benchmarks/ab_compare.py`` measures this comparison on 19 examples."""
    open_tab(page, "Verifier information A/B")
    page.locator("#ab-task input").click()
    page.get_by_role("option", name="instruction_following", exact=True).first.click()
    page.wait_for_timeout(1500)
    page.locator("#ab-example input").click()
    page.get_by_role("option", name=re.compile(r"^2: ")).first.click()
    page.wait_for_function(
        "() => document.querySelector('#info-b textarea').value.length > 0 && "
        "document.querySelector('#ab-verifier input').value === 'ifeval.ends_with'"
    )
    page.wait_for_timeout(1000)
    page.locator("#ab-btn").click()
    page.locator("#ab-diff .heatmaplayer").first.wait_for()
    shot(page, out / "screenshot_ab_smollm2.png", 1250, "#ab-status")


def main(argv=None) -> int:
    global WIDTH
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "assets"))
    ap.add_argument(
        "--width",
        type=int,
        default=WIDTH,
        help=f"viewport width in CSS pixels (default %(default)s; below {NARROW}: files named *_<width>.png)",
    )
    ap.add_argument("--height", type=int, default=1000, help="viewport height (default %(default)s)")
    ap.add_argument("--no-real", action="store_true", help="skip the SmolLM2 shots even where it is downloaded")
    args = ap.parse_args(argv)
    WIDTH = args.width
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    import torch
    from playwright.sync_api import sync_playwright

    from mrtpo_viz.ui import build_app, launch_options

    torch.set_num_threads(1)
    demo = build_app()
    _, url, _ = demo.launch(prevent_thread_lock=True, server_port=free_port(), quiet=True, **launch_options())
    try:
        with tempfile.TemporaryDirectory(prefix="mrtpo-shots-") as profile, sync_playwright() as pw:
            ctx = pw.chromium.launch_persistent_context(
                profile,
                executable_path=CHROMIUM,
                headless=True,
                args=FLAGS,
                viewport={"width": WIDTH, "height": args.height},
            )
            page = ctx.new_page()
            page.set_default_timeout(TIMEOUT_MS)
            page.goto(url)
            page.locator("#replay-btn").wait_for()
            from mrtpo_viz.policy.known import list_downloaded

            real = (
                [real_model, real_model_ab] if REAL_MODEL in list_downloaded() and not args.no_real else []
            )  # last: they switch the checkpoint
            for take in (relevance, free_prompt, ab, ab_split, rollouts, method, *real):
                take(page, out)
            ctx.close()
    finally:
        demo.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
