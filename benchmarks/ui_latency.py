"""Browser latency of the app: from the click on Replay (or Generate, then Replay) until the heatmap is drawn, and the
bytes the page receives for that replay.

The app runs as its own process (``python -m mrtpo_viz serve``, one torch thread), as a user runs it; Debian
chromium, driven by playwright from this process, opens it in a fresh profile. Each repeat reloads the page (no
heatmap on screen), picks the instruction-following task (its test example 5 has three verifiers: K = 3), types a
response of 128 tokens of the policy's tokenizer, clicks **Replay** and waits until plotly has drawn the final
heatmap (``#relevance-heatmap .js-plotly-plot .main-svg`` with its heatmap layer, and the status line saying
"Replayed"); the replay flow also records the first token shown and the first
coloured token (a progressive replay's tokens-first step and first row). ``generate+replay`` clicks **Generate**
(up to 128 new tokens), waits for its status line, then clicks **Replay**; its time covers both. ``edit+replay``
replays (not timed), appends a sentence to the second verifier's information, and times the Replay after it: the
loop of debugging a verifier's information, where the app's branch cache (``MRTPO_REPLAY_CACHE_MB``) reruns only
the edited branch. Every page gets a response of its own (128 tokens from another place of the sample text), so
that no other timed replay is served from that cache.

Times are taken IN THE PAGE (``performance.now()``): from the click event on the button (a capture listener, the
moment the browser dispatches the user's click) to the first animation frame after the heatmap layer entered the
page (the frame that paints it). ``driver_median_s`` is the same span seen from playwright (its click's
actionability checks, the round trips to the browser and the polling of ``wait_for_selector`` included): the
upper bound a test script sees, not what a user waits.

Bytes: the response bytes the page receives (Chrome DevTools ``Network.dataReceived``, all requests), from the click
until the heatmap is drawn (the replay's outputs: token view, heatmap, verdicts, group table, downloads), and until
the advantage bars are drawn as well (the chained advantages step). Gradio's event stream is not compressed, so
these are the bytes on the wire. ``server_cpu_median_s``: CPU seconds of the app's process during the flow.

The page's first load loads the app's default checkpoint (and warms it: ``mrtpo_viz.relevance.warm``); the first
replay after that load is timed on its own (``first_replay_s``: the one-time work a replay could still pay) and not
counted in the medians. Target: the heatmap within 1.0 s of the click. ``--threads 1,2`` runs the app at each thread
count in turn; ``--flows replay`` skips the generate flow.
``--checkpoint`` (a folder or a known model's name such as ``smollm2-135m-instruct``) becomes the app's default
checkpoint (``MRTPO_CHECKPOINT``); the default is the bundled policy.

    python benchmarks/ui_latency.py --repeats 7        # writes benchmarks/results/ui_latency.{csv,md}
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import socket
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
from _common import RESULTS, median, p95, set_threads  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TASK = "instruction_following"
EXAMPLE = 5
"""Its test example 5 has three verifiers (the replay uses the first K)."""
K = 3
RESPONSE_TOKENS = 128
HEATMAP = "#relevance-heatmap .js-plotly-plot .main-svg .heatmaplayer"
BARS = "#advantage-bars .barlayer path"
TARGET_S = 1.0
TIMEOUT_MS = 120_000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def response_texts(checkpoint: str, n: int) -> list[str]:
    """``n`` different responses of 128 tokens of sample text each, as the policy's tokenizer splits it: each replay
    of a run gets its own, so that none is served from the app's branch cache (``MRTPO_REPLAY_CACHE_MB``) but the
    edit flow's second replay, which measures that cache."""
    from mrtpo_viz.policy import load_policy

    tok, corpus = load_policy(checkpoint, device="cpu").tokenizer, _common.corpus()
    out = []
    for k in range(n):
        ids = _common.response_ids(tok, corpus, RESPONSE_TOKENS + 1, skip=3000 + 400 * k)[:RESPONSE_TOKENS]
        out.append(tok.decode(ids))
    return out


def launch_app(port: int, checkpoint: str, threads: int, code: str | None = None):
    """The app as its own process on ``port`` (the default checkpoint ``checkpoint``); returns it once it serves.
    ``code``: a checkout whose ``mrtpo_viz`` the app imports instead of the installed one (``--against``)."""
    import subprocess
    import urllib.request

    env = {
        **os.environ,
        "MRTPO_CHECKPOINT": checkpoint,
        "MRTPO_THREADS": str(threads),
        "GRADIO_ANALYTICS_ENABLED": "False",
        "HF_HUB_OFFLINE": "1",
    }
    if code:
        env["PYTHONPATH"] = os.pathsep.join([str(Path(code).resolve()), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    app = subprocess.Popen(
        [sys.executable, "-m", "mrtpo_viz", "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        cwd=code,  # ``-m`` puts the working directory first on the path: there, this checkout would win
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.time() + 120
    while time.time() < deadline:
        if app.poll() is not None:
            raise RuntimeError(f"the app exited: {app.stderr.read().decode(errors='replace')[-2000:]}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2)
            return app
        except OSError:
            time.sleep(0.5)
    app.kill()
    raise RuntimeError("the app did not answer within 120 s")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


CLOCK = """(selector) => {
  const t = window.__mrtpoT = {};
  for (const el of document.querySelectorAll('#replay-btn, #generate-btn'))
    el.addEventListener('click', () => { if (t.click === undefined) t.click = performance.now(); },
                        {capture: true, once: true});
  const status = () => (document.querySelector('#relevance-status') || {}).innerText || '';
  new MutationObserver((_, obs) => {
    if (t.click === undefined) return;
    const now = performance.now();
    if (t.tokens === undefined && document.querySelector('#relevance-tokens .tv-tok')) t.tokens = now;
    if (t.row === undefined && document.querySelector('#relevance-tokens .tv-tok[data-score]')) t.row = now;
    if (document.querySelector(selector) && /^Replayed \\d+ tokens/.test(status())) {
      obs.disconnect();
      requestAnimationFrame(() => { t.painted = performance.now(); });
    }
  }).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""
"""Installed in the page before a flow: the first click on Replay or Generate, the first token of the token view
(``tokens``), the first coloured token (``row``: a progressive replay's first verifier row, else the result), then
the frame that paints the final heatmap (the heatmap layer, with the status line saying "Replayed")
(``window.__mrtpoT``, milliseconds of ``performance.now()``)."""


FINAL = """(selector) => document.querySelector(selector) !== null
  && /^Replayed \\d+ tokens/.test((document.querySelector('#relevance-status') || {}).innerText || '')"""
"""The final heatmap is on the page, with the status line saying the replay is done."""


def page_seconds(page) -> float:
    """The in-page span CLOCK measured: click -> final heatmap painted."""
    page.wait_for_function("() => window.__mrtpoT && window.__mrtpoT.painted !== undefined", timeout=TIMEOUT_MS)
    t = page.evaluate("() => window.__mrtpoT")
    return (t["painted"] - t["click"]) / 1000


def page_marks(page) -> tuple[float, float]:
    """Click -> the first token shown, and click -> the first coloured token (seconds; after :func:`page_seconds`)."""
    t = page.evaluate("() => window.__mrtpoT")
    return tuple((t.get(k, t["painted"]) - t["click"]) / 1000 for k in ("tokens", "row"))


def prepare_page(page, url: str, response: str) -> None:
    """Fresh page: task, example EXAMPLE with K of its verifiers checked, the 128-token response typed in.

    The example is picked from its dropdown (after the task): a task switch alone keeps index 0 and so does not
    refill the verifiers.
    """
    from mrtpo_viz.tasks.example_sources import load_examples

    chosen = list(load_examples(TASK, split="test")[EXAMPLE].verifiers)
    if len(chosen) < K:
        raise RuntimeError(f"{TASK} example {EXAMPLE} has {len(chosen)} verifiers; {K} are needed")
    page.goto(url)
    page.wait_for_selector("#replay-btn", timeout=TIMEOUT_MS)
    page.get_by_label("Task family").first.click()
    page.get_by_role("option", name=TASK, exact=True).first.click()
    page.get_by_label("Example (test split)").first.click()
    page.get_by_role("option", name=re.compile(rf"^{EXAMPLE}: ")).first.click()
    boxes = [page.locator("#verifier-choice").get_by_label(name, exact=True) for name in chosen]
    for box in boxes:  # the example's verifiers arrive checked
        box.wait_for(timeout=TIMEOUT_MS)
        page.wait_for_function("(el) => el.checked", arg=box.element_handle(), timeout=TIMEOUT_MS)
    for box in boxes[K:]:
        box.uncheck()
    page.wait_for_timeout(500)  # the information boxes follow the verifier choice
    page.locator("#response-box textarea").fill(response)
    page.wait_for_timeout(300)  # the typed response reaches the app's state
    page.evaluate(CLOCK, HEATMAP)


class Received:
    """Bytes the page receives (Chrome DevTools Network.dataReceived), counted from ``start()``."""

    def __init__(self, page):
        self.cdp = page.context.new_cdp_session(page)
        self.cdp.send("Network.enable")
        self.total = 0
        self.cdp.on("Network.dataReceived", self._add)

    def _add(self, event) -> None:
        self.total += int(event.get("dataLength", 0))

    def start(self) -> None:
        self.total = 0


def time_replay(page, got: Received, pid: int) -> tuple[float, float, float, int, int, float, float]:
    """(in-page s, driver s, the app's CPU s, bytes until the heatmap, bytes until the bars, in-page s to the first
    token shown, to the first coloured token) from the click on Replay."""
    start, cpu = time.perf_counter(), cpu_seconds(pid)
    got.start()
    page.click("#replay-btn")
    page.wait_for_function(FINAL, arg=HEATMAP, timeout=TIMEOUT_MS)
    driver, cpu, to_heatmap = time.perf_counter() - start, cpu_seconds(pid) - cpu, got.total
    in_page = page_seconds(page)
    tokens, row = page_marks(page)
    page.locator(BARS).first.wait_for(timeout=TIMEOUT_MS)
    page.wait_for_timeout(300)  # the last frames of the chained step
    return in_page, driver, cpu, to_heatmap, got.total, tokens, row


def time_generate_replay(page, got: Received, pid: int) -> tuple[float, float, float, int, int]:
    """The same from the click on Generate, through its result, the click on Replay, to the heatmap."""
    start, cpu = time.perf_counter(), cpu_seconds(pid)
    got.start()
    page.click("#generate-btn")
    page.get_by_text("Generated ").first.wait_for(timeout=TIMEOUT_MS)
    page.wait_for_function("() => !document.querySelector('#replay-btn').disabled", timeout=TIMEOUT_MS)
    page.click("#replay-btn")
    page.wait_for_function(FINAL, arg=HEATMAP, timeout=TIMEOUT_MS)
    driver, cpu = time.perf_counter() - start, cpu_seconds(pid) - cpu
    return page_seconds(page), driver, cpu, got.total, got.total


def time_edit_replay(page, got: Received, pid: int) -> tuple[float, float, float, int, int, float, float]:
    """A replay (not timed), then an edit of the second verifier's information and Replay again: that second replay,
    as :func:`time_replay` (the loop of debugging a verifier's information; with the branch cache, only the edited
    branch runs)."""
    page.click("#replay-btn")
    page.wait_for_function(FINAL, arg=HEATMAP, timeout=TIMEOUT_MS)
    page.locator(BARS).first.wait_for(timeout=TIMEOUT_MS)
    box = page.locator(".mrtpo-info textarea").nth(1)
    box.fill(box.input_value() + " Check this one twice.")
    page.wait_for_function(  # the edit reached the app: the status line says the result is stale
        "() => ((document.querySelector('#relevance-status') || {}).innerText || '').includes('inputs changed')",
        timeout=TIMEOUT_MS,
    )
    page.evaluate(CLOCK, HEATMAP)
    return time_replay(page, got, pid)


FLOWS = {"replay": time_replay, "generate+replay": time_generate_replay, "edit+replay": time_edit_replay}
TIMED_LIKE_REPLAY = ("replay", "edit+replay")
"""Flows whose rows carry the bytes with the bars and the target (the tokens and first row only the replay flow's:
after an edit the earlier result's tokens are still on the page)."""


@contextlib.contextmanager
def browser_page():
    """A fresh headless chromium profile and page, and its byte counter: ``(page, Received)``."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="mrtpo_chromium_") as profile, sync_playwright() as pw:
        browser = pw.chromium.launch_persistent_context(
            profile,
            executable_path=CHROMIUM,
            args=CHROMIUM_FLAGS,
            headless=True,
            viewport={"width": 1400, "height": 1000},
        )
        try:
            page = browser.new_page()
            yield page, Received(page)
        finally:
            browser.close()


def loaded_and_replayed(page, got: Received, url: str, response: str, pid: int) -> tuple:
    """Open the app at ``url``, wait until it has loaded (and warmed) its default checkpoint, and replay once: the
    first replay after loading (returned, not counted with the others)."""
    prepare_page(page, url, response)
    page.wait_for_function("() => document.body.innerText.includes('Loaded ')", timeout=TIMEOUT_MS)
    return time_replay(page, got, pid)


def measure_flows(url: str, responses: list[str], repeats: int, pid: int, flows=FLOWS) -> dict[str, list[tuple]]:
    """Per flow, ``repeats`` (in-page s, driver s, CPU s, bytes, bytes) tuples, each on a freshly loaded page with a
    response of its own (``responses``: 1 + repeats x flows of them), and ``"first replay"``: the first replay after
    the page's load of the checkpoint."""
    times = {name: [] for name in flows}
    with browser_page() as (page, got):
        times["first replay"] = [loaded_and_replayed(page, got, url, responses[0], pid)]
        fresh = iter(responses[1:])
        for i in range(repeats):
            for name, flow in flows.items():
                prepare_page(page, url, next(fresh))
                times[name].append(flow(page, got, pid))
                print(name, i, [round(x, 3) for x in times[name][-1]], flush=True)
    return times


def compare_replays(urls: dict[str, str], pids: dict[str, int], responses: list[str], repeats: int) -> dict[str, list]:
    """The replay flow on each app in ``urls`` in turn, ``repeats`` rounds (A, B, A, B, ...: a drift in the
    machine's speed reaches both alike; round ``i`` replays ``responses[i + 1]`` on each), one browser; the first
    replay of each app after its page's load (``responses[0]``) is not counted. Returns each app's list of
    :func:`time_replay` tuples."""
    times = {label: [] for label in urls}
    with browser_page() as (page, got):
        for label, url in urls.items():
            loaded_and_replayed(page, got, url, responses[0], pids[label])
        for i in range(repeats):
            for label, url in urls.items():
                prepare_page(page, url, responses[i + 1])
                times[label].append(time_replay(page, got, pids[label]))
                print(label, i, round(times[label][-1][0], 3), flush=True)
    return times


def _revision(checkout: str) -> str:
    """A checkout's commit (short hash), or its path where git cannot tell."""
    import subprocess

    done = subprocess.run(["git", "-C", checkout, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else checkout


def run_against(other: str, repeats: int, checkpoint: str | None, threads: int) -> list[dict]:
    """This checkout's app and ``other``'s (a checkout of another revision), interleaved; one row per app and a
    ``B / A`` row of the per-round ratios (median): below 1 means this checkout is faster."""
    from mrtpo_viz.settings import default_checkpoint

    if checkpoint:
        os.environ["MRTPO_CHECKPOINT"] = checkpoint
    checkpoint = default_checkpoint()
    apps = {"this checkout": launch_app(free_port(), checkpoint, threads)}
    try:
        apps[f"against {_revision(other)}"] = launch_app(free_port(), checkpoint, threads, code=other)
        urls = {label: f"http://127.0.0.1:{app.args[-1]}/" for label, app in apps.items()}
        responses = response_texts(checkpoint, repeats + 1)
        times = compare_replays(urls, {k: a.pid for k, a in apps.items()}, responses, repeats)
    finally:
        for app in apps.values():
            app.terminate()
            app.wait(timeout=30)
    (a, ta), (b, tb) = times.items()
    row = dict(model=_common.model_label(checkpoint), threads=threads, response_tokens=RESPONSE_TOKENS, K=K)
    out = [{**row, "app": label, **summary("replay", t)} for label, t in times.items()]
    ratios = [x[0] / y[0] for x, y in zip(ta, tb)]
    out.append({**row, "app": f"{a} / {b}", "repeats": len(ratios), "median_s": round(median(ratios), 3)})
    return out


def summary(name: str, runs: list[tuple]) -> dict:
    walls = [r[0] for r in runs]
    return {
        "flow": name,
        "response_tokens": RESPONSE_TOKENS,
        "K": K,
        "repeats": len(runs),
        "median_s": round(median(walls), 3),
        "p95_s": round(p95(walls), 3),
        "max_s": round(max(walls), 3),
        "driver_median_s": round(median([r[1] for r in runs]), 3),
        "server_cpu_median_s": round(median([r[2] for r in runs]), 3),
        "kb_to_heatmap": round(median([r[3] for r in runs]) / 1024, 1),
        "kb_with_advantages": round(median([r[4] for r in runs]) / 1024, 1) if name in TIMED_LIKE_REPLAY else None,
        "tokens_median_s": round(median([r[5] for r in runs]), 3) if name == "replay" else None,
        "first_row_median_s": round(median([r[6] for r in runs]), 3) if name == "replay" else None,
        "target_s": TARGET_S if name in TIMED_LIKE_REPLAY else None,
        "met": (median(walls) <= TARGET_S) if name in TIMED_LIKE_REPLAY else None,
    }


def in_process(checkpoint: str, response: str, threads: int) -> tuple[float, int, float]:
    """KiB of the token view's JSON for the benchmark's replay (the span HTML with tooltips it replaced was ~220 KB
    for the same replay), the replay's token count, and the engine alone: the median seconds of three one-shot
    replays of the same case in this process at ``threads`` (after one unmeasured), with no app and no page (while
    this runs, the app is stopped)."""
    from mrtpo_viz.relevance import replay
    from mrtpo_viz.tasks.example_sources import load_examples
    from mrtpo_viz.ui.policy_choice import get_policy
    from mrtpo_viz.viz import payload_bytes, relevance_payload

    ex = load_examples(TASK, split="test")[EXAMPLE]
    policy, before = get_policy(checkpoint), set_threads(threads)
    try:
        rel = replay(policy, ex, response, list(ex.verifiers)[:K])
        times = []
        for _ in range(3):
            start = time.perf_counter()
            replay(policy, ex, response, list(ex.verifiers)[:K])
            times.append(time.perf_counter() - start)
    finally:
        set_threads(before)
    return round(payload_bytes(relevance_payload(rel)) / 1024, 1), rel.T, round(median(times), 3)


def run(
    quick: bool = True, repeats: int = 5, checkpoint: str | None = None, threads: int = 1, flows=FLOWS
) -> list[dict]:
    """Median and p95 seconds per flow (quick: 3 repeats), on ``checkpoint`` (default: the app's default)."""
    from mrtpo_viz.settings import default_checkpoint

    if checkpoint:
        os.environ["MRTPO_CHECKPOINT"] = checkpoint
    checkpoint = default_checkpoint()
    port = free_port()
    app = launch_app(port, checkpoint, threads)
    try:
        n = 3 if quick else repeats
        responses = response_texts(checkpoint, 1 + n * len(flows))
        times = measure_flows(f"http://127.0.0.1:{port}/", responses, n, app.pid, flows)
    finally:
        app.terminate()
        app.wait(timeout=30)
    view_kb, T, engine = in_process(checkpoint, responses[0], threads)
    first = times.pop("first replay")[0]
    return [
        {
            "model": _common.model_label(checkpoint),
            "threads": threads,
            **summary(name, runs),
            "first_replay_s": round(first[0], 3) if name == "replay" else None,
            "token_view_kb": view_kb if name == "replay" else None,
            "engine_s": engine if name == "replay" else None,
        }
        for name, runs in times.items()
    ]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", default="1", help="torch threads of the app; comma-separated: each in turn")
    ap.add_argument("--flows", default=",".join(FLOWS), help=f"flows to time (of {', '.join(FLOWS)})")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="3 repeats")
    ap.add_argument(
        "--checkpoint",
        default=None,
        help="a folder or a known model's name (default: the app's); comma-separated: each in turn",
    )
    ap.add_argument("--out", default=str(RESULTS / "ui_latency"))
    ap.add_argument(
        "--against",
        default=None,
        help="a checkout of another revision: its app and this one's, replay flow, interleaved round by round",
    )
    args = ap.parse_args(argv)
    thread_counts = [int(t) for t in str(args.threads).split(",")]
    set_threads(thread_counts[0])
    if args.against:
        return against(args, thread_counts)
    flows = {name: FLOWS[name] for name in args.flows.split(",")}
    load_start = _common.load_average()
    rows = [
        r
        for t in thread_counts
        for c in (args.checkpoint or "").split(",")
        for r in run(quick=args.quick, repeats=args.repeats, checkpoint=c or None, threads=t, flows=flows)
    ]
    models = ", ".join(dict.fromkeys(f"`{r['model']}`" for r in rows))
    note = [
        f"`{_common.command('ui_latency.py', sys.argv[1:])}`; {_common.machine()} (the app's model "
        f"calls; `threads` per row); {_common.cpu_description()}; load average {load_start} at the start and "
        f"{_common.load_average()} at the end; policy {models}; headless Debian chromium through playwright on "
        "the same machine.",
        "",
        f"Seconds from the click until the final heatmap is painted, measured in the page (`performance.now()`: "
        f"the click event on the button to the animation frame after the heatmap layer appeared with the status "
        f"line saying Replayed); `tokens_median_s` / `first_row_median_s`: to the first token shown and the first "
        f"coloured token (a progressive replay's tokens-first step and first verifier row; the result itself where "
        f"the replay is one-shot); "
        f"{RESPONSE_TOKENS}-token response, K = {K} verifiers; the first replay after the page loaded the policy "
        "not counted (`first_replay_s`: that replay alone); the "
        "app in its own process (`python -m mrtpo_viz serve`). `generate+replay`: click Generate (up to 128 "
        "new tokens), wait for it, click Replay, until the heatmap is painted. `driver_median_s`: the same span "
        "seen from playwright (its click's actionability checks, round trips and polling included: what a test "
        "script waits, not a user). `server_cpu_median_s`: CPU seconds of the app's process during the flow. "
        "`kb_to_heatmap`: KiB the page received from the click until the heatmap was drawn; "
        "`kb_with_advantages`: until the advantage bars were drawn too; `token_view_kb`: the token view's JSON "
        "alone (the span HTML with tooltips it replaced was ~220 KB for the same replay); `engine_s`: the same replay "
        "in the benchmark's own process at the row's thread count, one-shot, no app and no page (median of 3): what "
        "the page adds is `median_s - engine_s`.",
    ]
    _, md = _common.write_results(rows, Path(args.out), "App latency in the browser", note)
    print(md.read_text())
    return 0


def against(args, thread_counts: list[int]) -> int:
    """``--against``: the interleaved comparison, one table."""
    load_start = _common.load_average()
    rows = [r for t in thread_counts for r in run_against(args.against, args.repeats, args.checkpoint, t)]
    note = [
        f"`{_common.command('ui_latency.py', sys.argv[1:])}`; {_common.machine()}; {_common.cpu_description()}; "
        f"load average {load_start} at the start and {_common.load_average()} at the end; headless Debian chromium "
        "through playwright on the same machine.",
        "",
        "The replay flow (seconds from the click on Replay until the final heatmap is painted, measured in the page; "
        f"{RESPONSE_TOKENS}-token response, K = {K}) on two apps served side by side, this checkout's and "
        "another revision's (`--against`), in turns: one replay on A, one on B, and so on, so that a drift in the "
        "machine's speed reaches both. The last row per thread count is the median of the per-round ratios A / B.",
    ]
    _, md = _common.write_results(rows, Path(args.out), "App latency in the browser: two revisions", note)
    print(md.read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
