"""A shared Space under load: 16 concurrent ``gradio_client`` sessions replaying against one local app.

The app runs in a child process (``python -m mrtpo_viz serve``, loopback only, ``MRTPO_THREADS`` torch threads)
so that its memory can be watched. Each session is its own ``gradio_client.Client`` (its own Gradio session and
``gr.State``) and loops, until the deadline or ``--max-requests``, over:

1. ``/replay`` of the first tool-calling test example with a response and an information text that only this
   session uses (the reference plus a marker ``S07Z``, the information plus ``(session 07)``);
2. ``/advantages`` for a typed group, which reads the session's own replayed ``Relevance`` from ``gr.State``.

Checks per request: no error; the Relevance JSON that came back holds this session's response and information; the
advantage chart's x axis is this session's tokens (a leak of another session's state would show another marker).
Memory: the server's RSS every 2 s, from the moment every session has finished its warm-up rounds (``--warmup``,
default 2) to the end; goal: under 5% growth from the warm-up to the end. Goal for errors and leaks: 0.

With ``--hostile H``, H more sessions send, in turn and without pause, the slowest inputs of
``hostile_inputs.py`` (SQL that only a kill stops, replays at every cap, a 200,000-row table, a poisoned upload,
typed specials, probed paths) beside the benign ones. Their requests are expected to be refused; what is measured
is the benign sessions' latency and errors beside them, the hostile requests' latency per kind (a request that
does not come back, or a server error that is not a readable refusal, counts as a hostile failure) and the
server's memory before and after.

With ``--flood N``, one more client (one address) runs N sessions that each loop the largest replay
(``hostile_inputs``' ``max_replay``: six verifiers, information and response at the token cap) without pause: the
one-client-many-sessions attacker of issue 42. Its requests past the server's per-client caps are refused (429,
a readable refusal: an answer); what is measured is the benign sessions' latency beside it.

Every session speaks for its own client address (``X-Forwarded-For``, which the app's server takes from a loopback
peer, as it would from a trusted proxy): the server's fairness and caps are per client address, so sessions that
all came from 127.0.0.1 would be one client.

    python benchmarks/load.py --sessions 16 --duration 60     # writes benchmarks/results/load.{csv,md}
    python benchmarks/load.py --sessions 12 --hostile 4 --duration 120   # writes load_hostile.{csv,md}
    python benchmarks/load.py --sessions 4 --flood 16 --duration 60      # writes load_flood.{csv,md}
"""

from __future__ import annotations

import dataclasses
import json
import argparse
import csv
import os
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
from _common import RESULTS, ROOT, median, p95  # noqa: E402

TASK, EXAMPLE = "tool_calling", 0
REQUEST_TIMEOUT_S = 600
"""Client-side timeout of one request: 16 sessions share one model queue on a busy machine."""


def address(i: int) -> str:
    """Session ``i``'s client address (one per session; the flood's sessions share :data:`FLOOD_ADDRESS`)."""
    return f"10.0.{i // 250}.{i % 250 + 1}"


FLOOD_ADDRESS = "10.9.9.9"
FLOOD_PAUSE_S = 0.05
"""After a refusal a flood session tries again this soon (the clients share the machine with the server)."""


def client_for(url: str, addr: str):
    from gradio_client import Client

    return Client(
        url,
        verbose=False,
        analytics_enabled=False,
        headers={"X-Forwarded-For": addr},
        httpx_kwargs={"timeout": REQUEST_TIMEOUT_S},
    )


@dataclass
class Request:
    """One timed request of one session."""

    session: int
    endpoint: str
    start_s: float
    """Seconds since the load started."""
    latency_s: float
    ok: bool
    leak: bool = False
    """The answer held another session's response, information or tokens."""
    error: str = ""
    kind: str = "benign"
    """``benign``, the hostile input's kind (``hostile_inputs.KINDS``), or ``flood``."""
    refused: bool = False
    """A flood request the server refused at once (its client's cap of requests in flight: 429)."""


@dataclass
class Load:
    """What every session thread appends to, and the time origin."""

    t0: float
    deadline: float
    max_requests: int
    warmup_rounds: int
    requests: list[Request] = field(default_factory=list)
    warm: threading.Barrier = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, r: Request) -> None:
        with self.lock:
            self.requests.append(r)


# ----------------------------------------------------------------------------------------------- the server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int, threads: int) -> subprocess.Popen:
    env = {**os.environ, "MRTPO_THREADS": str(threads), "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_OFFLINE": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "mrtpo_viz", "serve", "--host", "127.0.0.1", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def wait_up(url: str, proc: subprocess.Popen, timeout_s: float = 180) -> None:
    import httpx

    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"the app exited: {proc.stderr.read().decode()[-2000:]}")
        try:
            if httpx.get(url, timeout=10).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1)
    raise TimeoutError(f"the app did not answer at {url} within {timeout_s:.0f} s")


def prewarm(url: str, checkpoint: str) -> None:
    """Load the checkpoint in the app before the sessions start (the load is not part of any request's latency)."""
    from gradio_client import Client

    client = Client(url, verbose=False, analytics_enabled=False, httpx_kwargs={"timeout": REQUEST_TIMEOUT_S})
    try:
        status = client.predict(checkpoint, api_name="/load_checkpoint")
    finally:
        client.close()
    if "Loaded" not in status:
        raise RuntimeError(f"the app could not load {checkpoint}: {status}")


def rss_mib(pid: int) -> float:
    import psutil

    return psutil.Process(pid).memory_info().rss / 2**20


def watch_rss(pid: int, workers: list[threading.Thread], every_s: float = 2.0) -> list[float]:
    """The server's RSS (MiB) every ``every_s`` seconds until every session has ended (at least one sample)."""
    trace = [rss_mib(pid)]
    while any(w.is_alive() for w in workers):
        time.sleep(every_s)
        trace.append(rss_mib(pid))
    return trace


# ----------------------------------------------------------------------------------------------- one session


def session_inputs(i: int, checkpoint: str) -> tuple[list, str, str]:
    """/replay inputs whose response and first information carry session ``i``'s marker; (inputs, response, info)."""
    from mrtpo_viz.ui.example_picker import get_example, prompt_text
    from mrtpo_viz.tasks import get_verifier

    ex = get_example(TASK, EXAMPLE)
    response = f"{ex.reference} S{i:02d}Z"
    infos = [get_verifier(n).info(ex) for n in ex.verifiers]
    infos[0] = f"{infos[0]} (session {i:02d})"
    inputs = [
        checkpoint,
        TASK,
        EXAMPLE,
        prompt_text(ex),
        response,
        list(ex.verifiers),
        "user_end",
        "js",
        "none",
        "\n\n[Verifier: {title}] {info}",
        *(infos + [""] * 6)[:6],
    ]
    return inputs, response, infos[0]


def _group(verifiers: list[str]) -> dict:
    K = len(verifiers)
    return {
        "headers": ["response", *verifiers],
        "data": [["replayed"] + [1.0] * K, ["b"] + [0.0] * K, ["c"] + [1.0] + [0.0] * (K - 1)],
    }


def _replay_leak(files, response: str, info: str, verifier: str) -> tuple[bool, list[str]]:
    """(leaked?, expected advantage x labels) from the Relevance JSON that /downloads wrote after the replay."""
    from mrtpo_viz import viz
    from mrtpo_viz.relevance.results import Relevance

    js = files[1]["value"] if isinstance(files[1], dict) else files[1]
    rel = Relevance.from_json(Path(js).read_text(encoding="utf-8"))
    leaked = rel.response != response or rel.infos.get(verifier) != info
    return leaked, viz.token_axis(rel.tokens)


def _advantage_leak(fig, labels: list[str]) -> bool:
    import json

    figure = json.loads((fig.get("value", fig) if isinstance(fig, dict) else fig)["plot"])
    return figure["data"][0]["x"] != labels


def _call(load: Load, i: int, endpoint: str, fn):
    """(answer, start, end) of one request; a failed request is recorded here and answers None."""
    start = time.monotonic()
    try:
        return fn(), start, time.monotonic()
    except Exception as err:  # noqa: BLE001 -- any failure of a request is counted, not raised
        load.add(
            Request(
                i,
                endpoint,
                start - load.t0,
                time.monotonic() - start,
                False,
                error=f"{type(err).__name__}: {err}"[:200],
            )
        )
        return None, start, None


def run_session(i: int, url: str, checkpoint: str, load: Load) -> None:
    """Replay, then advantages, until the deadline or ``max_requests``; the first rounds are the warm-up."""

    inputs, response, info = session_inputs(i, checkpoint)
    verifiers, client, warmed = inputs[5], None, False
    try:
        client = client_for(url, address(i))
        for n in range(load.max_requests // 2):
            if time.monotonic() > load.deadline:
                break
            out, start, end = _call(load, i, "/replay", lambda: client.predict(*inputs, api_name="/replay"))
            if out is not None:  # this session's replay, as files (the step after /replay)
                files, _, _ = _call(load, i, "/downloads", lambda: client.predict(api_name="/downloads"))
                out = files and out
            if out is not None:
                leaked, labels = _replay_leak(files, response, info, verifiers[0])
                load.add(Request(i, "/replay", start - load.t0, end - start, True, leak=leaked))
                out, start, end = _call(
                    load,
                    i,
                    "/advantages",
                    lambda: client.predict(_group(verifiers), 1.0, 1.0, "controlled", api_name="/advantages"),
                )
                if out is not None:
                    load.add(
                        Request(
                            i, "/advantages", start - load.t0, end - start, True, leak=_advantage_leak(out[0], labels)
                        )
                    )
            if not warmed and n + 1 >= load.warmup_rounds:
                warmed = True
                try:
                    load.warm.wait()
                except threading.BrokenBarrierError:  # another session failed early: keep going without it
                    pass
    finally:
        if not warmed:  # a session that failed early must not hold the others at the barrier
            load.warm.abort()
        if client is not None:
            client.close()


def _answer_text(api: str, out) -> str:
    """What a hostile request got back, in a line: the status, or a replay's verdict reasons."""
    if api == "/load_checkpoint":
        return str(out)[:120]
    if api == "/replay":
        table = out[5].get("value", out[5]) if isinstance(out[5], dict) else {}
        reasons = "; ".join(str(row[2]) for row in table.get("data", []))
        return f"replayed ({reasons})"[:160]
    return "answered"


def _raw_upload(url: str, path: str, addr: str) -> str:
    """Post a file to Gradio's upload route as a browser would; the answer in a line. Only a refusal (413) or an
    accepted upload is an answer."""
    import httpx

    with open(path, "rb") as fh:
        r = httpx.post(
            f"{url}gradio_api/upload",
            files={"files": (Path(path).name, fh)},
            headers={"X-Forwarded-For": addr},
            timeout=REQUEST_TIMEOUT_S,
        )
    if r.status_code not in (200, 413):
        raise RuntimeError(f"upload answered {r.status_code}")
    return f"upload answered {r.status_code}: {r.text[:100]}"


def run_hostile_session(i: int, url: str, load: Load, hostile: dict) -> None:
    """The hostile inputs in turn, from the start of the measured window to its end. A readable refusal (the app's
    error message) is an answer; a request that fails otherwise (a timeout, a dropped connection) is not."""
    import hostile_inputs
    import httpx
    from gradio_client import handle_file
    from gradio_client.exceptions import AppError

    try:
        load.warm.wait()
    except threading.BrokenBarrierError:
        pass
    client = client_for(url, address(i))
    try:
        for n in range(load.max_requests):
            if time.monotonic() > load.deadline:
                break
            kind = list(hostile)[(n + i) % len(hostile)]
            api, inputs = hostile[kind]
            inputs = [
                handle_file(x) if isinstance(x, str) and x.endswith(hostile_inputs.UPLOADS) else x for x in inputs
            ]
            start, answered, error = time.monotonic(), True, ""
            try:
                if kind in hostile_inputs.SETUP:  # the session's verifier choices become that task's
                    client.predict(hostile_inputs.SETUP[kind], 0, api_name="/pick_example")
                    start = time.monotonic()
                if api == "/gradio_api/upload":
                    error = _raw_upload(url, inputs[0], address(i))
                else:
                    error = _answer_text(api, client.predict(*inputs, api_name=api))
            except AppError as err:  # a refusal with a message: what the app should do
                error = str(err)[:160]
            except httpx.HTTPStatusError as err:  # the serving guard's 413 / 429 carry a readable detail
                answered = err.response.status_code in (413, 429)
                error = f"{err.response.status_code}: {err.response.text}"[:160]
            except Exception as err:  # noqa: BLE001 -- no answer at all: a failure
                answered, error = False, f"{type(err).__name__}: {err}"[:200]
            load.add(Request(i, api, start - load.t0, time.monotonic() - start, answered, error=error, kind=kind))
    finally:
        client.close()


def run_flood_session(i: int, url: str, load: Load, inputs: list) -> None:
    """One of the flood's sessions: the largest replay again and again from the flood's one address, from the
    start of the measured window to its end. A refusal (the server's 429, or the app's message) is an answer."""
    import hostile_inputs
    import httpx
    from gradio_client.exceptions import AppError

    try:
        load.warm.wait()
    except threading.BrokenBarrierError:
        pass
    client = client_for(url, FLOOD_ADDRESS)
    try:
        while time.monotonic() < load.deadline:  # the pick too waits for a place among the address's 8 in flight
            try:
                client.predict(hostile_inputs.SETUP["max_replay"], 0, api_name="/pick_example")
                break
            except httpx.HTTPStatusError as err:
                if err.response.status_code != 429:
                    raise
                time.sleep(FLOOD_PAUSE_S)
        for _ in range(load.max_requests):
            if time.monotonic() > load.deadline:
                break
            start, answered, refused, error = time.monotonic(), True, False, ""
            try:
                client.predict(*inputs, api_name="/replay")
            except AppError as err:
                error = str(err)[:160]
            except httpx.HTTPStatusError as err:
                refused = err.response.status_code == 429
                answered = refused or err.response.status_code == 413
                error = f"{err.response.status_code}: {err.response.text}"[:160]
            except Exception as err:  # noqa: BLE001 -- no answer at all: a failure
                answered, error = False, f"{type(err).__name__}: {err}"[:200]
            load.add(
                Request(
                    i,
                    "/replay",
                    start - load.t0,
                    time.monotonic() - start,
                    answered,
                    error=error,
                    kind="flood",
                    refused=refused,
                )
            )
            if refused:
                time.sleep(FLOOD_PAUSE_S)
    finally:
        client.close()


# ----------------------------------------------------------------------------------------------- the run


SETTLE_S = 10.0
"""Seconds of no load after every session has stopped before the server's RSS is read again."""


def run(
    sessions: int,
    duration_s: float,
    max_requests: int,
    threads: int,
    checkpoint: str,
    warmup: int = 2,
    hostile: int = 0,
    kinds: tuple[str, ...] = (),
    requests_out: Optional[Path] = None,
    flood: int = 0,
) -> dict:
    import tempfile

    import hostile_inputs

    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    proc = start_server(port, threads)
    scratch = tempfile.TemporaryDirectory(prefix="mrtpo-load-")
    try:
        wait_up(url, proc)
        prewarm(url, checkpoint)
        built = hostile_inputs.build(checkpoint, Path(scratch.name)) if hostile or flood else {}
        bad = {k: v for k, v in built.items() if k in kinds} if kinds else built
        rss = {"start": rss_mib(proc.pid)}
        load = Load(t0=time.monotonic(), deadline=float("inf"), max_requests=max_requests, warmup_rounds=warmup)
        load.warm = threading.Barrier(sessions + hostile + flood + 1)
        workers = [
            threading.Thread(target=run_session, args=(i, url, checkpoint, load), daemon=True) for i in range(sessions)
        ]
        workers += [
            threading.Thread(target=run_hostile_session, args=(sessions + j, url, load, bad), daemon=True)
            for j in range(hostile)
        ]
        workers += [
            threading.Thread(
                target=run_flood_session, args=(sessions + hostile + j, url, load, built["max_replay"][1]), daemon=True
            )
            for j in range(flood)
        ]
        for w in workers:
            w.start()
        try:
            load.warm.wait(timeout=600)
        except threading.BrokenBarrierError:  # a session failed before its first round: its errors are counted
            pass
        rss["warm"], warm_s = rss_mib(proc.pid), time.monotonic() - load.t0
        load.deadline = time.monotonic() + duration_s  # the measured window starts after the warm-up
        trace = watch_rss(proc.pid, workers)
        rss["mid"], rss["end"], rss["max"] = trace[len(trace) // 2], trace[-1], max(trace)
        elapsed = time.monotonic() - load.t0
        time.sleep(SETTLE_S)  # every session has stopped: what the server keeps once the load is gone
        rss["after"] = rss_mib(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        scratch.cleanup()
    benign = [r for r in load.requests if r.kind == "benign"]
    if requests_out is not None:  # every timed request, to see which hostile kinds overlap the slow benign ones
        Path(requests_out).write_text(json.dumps([dataclasses.asdict(r) for r in load.requests]) + "\n")
    summary = {
        "model": _common.model_label(checkpoint),
        **summarize(benign, rss, elapsed, warm_s, sessions, threads, duration_s, warmup),
    }
    if hostile:
        summary.update(summarize_hostile([r for r in load.requests if r.kind not in ("benign", "flood")], hostile))
    if flood:
        summary.update(summarize_flood([r for r in load.requests if r.kind == "flood"], flood))
    return summary


def summarize_flood(requests: list[Request], flood: int) -> dict:
    """The flood's requests: replays served, refusals (429), those not answered, and the served replays' latency."""
    served = [r.latency_s for r in requests if r.ok and not r.refused and not r.error]
    return {
        "flood_sessions": flood,
        "flood_address": FLOOD_ADDRESS,
        "flood_requests": len(requests),
        "flood_replays_served": len(served),
        "flood_refused_429": sum(r.refused for r in requests),
        "flood_unanswered": sum(not r.ok for r in requests),
        "flood_replay_p50_s": _stat(median, served),
        "flood_replay_p95_s": _stat(p95, served),
        "flood_answers": sorted({" ".join(r.error.split())[:150] for r in requests if r.error})[:6],
    }


def summarize_hostile(requests: list[Request], hostile: int) -> dict:
    """Per kind: requests, those not answered, median and max latency (the app's answer, usually a refusal)."""
    out = {
        "hostile_sessions": hostile,
        "hostile_requests": len(requests),
        "hostile_unanswered": sum(not r.ok for r in requests),
    }
    for kind in sorted({r.kind for r in requests}):
        lat = [r.latency_s for r in requests if r.kind == kind]
        out[f"hostile_{kind}"] = (
            f"{len(lat)} requests, {sum(not r.ok for r in requests if r.kind == kind)} "
            f"unanswered, p50 {median(lat):.2f} s, max {max(lat):.2f} s"
        )
    out["hostile_answers"] = sorted({f"{r.kind}: {' '.join(r.error.split())[:150]}" for r in requests})[:14]
    return out


def _stat(fn, xs: list[float]) -> float:
    return round(fn(xs), 3) if xs else float("nan")


def summarize(
    requests: list[Request],
    rss: dict,
    elapsed: float,
    warm_s: float,
    sessions: int,
    threads: int,
    duration_s: float,
    warmup: int,
) -> dict:
    """Errors and leaks over all requests; latency and throughput over the window after the warm-up."""
    ok = [r for r in requests if r.ok and r.start_s >= warm_s]  # the measured window: after the warm-up
    window = elapsed - warm_s
    replays = [r.latency_s for r in ok if r.endpoint == "/replay"]
    advantages = [r.latency_s for r in ok if r.endpoint == "/advantages"]
    return {
        "sessions": sessions,
        "duration_s": duration_s,
        "measured_s": round(window, 1),
        "torch_threads": threads,
        "malloc_arena_max": os.environ.get("MALLOC_ARENA_MAX", "glibc default"),
        "requests": len(requests),
        "errors": sum(not r.ok for r in requests),
        "leaks": sum(r.leak for r in requests),
        "throughput_rps": round(len(ok) / window, 3),
        "replays_per_s": round(len(replays) / window, 3),
        "replay_p50_s": _stat(median, replays),
        "replay_p95_s": _stat(p95, replays),
        "advantages_p50_s": _stat(median, advantages),
        "advantages_p95_s": _stat(p95, advantages),
        "warmup_rounds": warmup,
        "warm_up_s": round(warm_s, 1),
        "rss_start_mib": round(rss["start"], 1),
        "rss_warm_mib": round(rss["warm"], 1),
        "rss_mid_mib": round(rss["mid"], 1),
        "rss_end_mib": round(rss["end"], 1),
        "rss_max_mib": round(rss["max"], 1),
        "rss_growth_pct": round(100 * (rss["end"] / rss["warm"] - 1), 2),
        "rss_growth_second_half_pct": round(100 * (rss["end"] / rss["mid"] - 1), 2),
        "rss_after_idle_mib": round(rss["after"], 1),
        "rss_after_idle_vs_warm_pct": round(100 * (rss["after"] / rss["warm"] - 1), 2),
        "first_errors": sorted({r.error for r in requests if not r.ok})[:3],
    }


def write(summary: dict, requests_csv: Path, md: Path, machine: str, load_avg: str) -> None:
    with requests_csv.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["metric", "value"])
        writer.writerows(
            [k, v] for k, v in summary.items() if k not in ("first_errors", "hostile_answers", "flood_answers")
        )
    goals = {
        "errors": "0",
        "leaks": "0",
        "rss_growth_pct": "< 5",
        "rss_growth_second_half_pct": "~0 (plateau)",
        "hostile_unanswered": "0",
        "flood_unanswered": "0",
        "rss_after_idle_vs_warm_pct": "<= 20",
    }
    rows = "\n".join(
        f"| {k} | {v} | {goals.get(k, '')} |"
        for k, v in summary.items()
        if k not in ("first_errors", "hostile_answers", "flood_answers")
    )
    errors = "".join(f"\n- `{e}`" for e in summary["first_errors"]) or " none"
    if "hostile_answers" in summary:
        errors += "\n\nWhat the app answered the hostile sessions (one line per distinct answer):" + "".join(
            f"\n- `{e}`" for e in summary["hostile_answers"]
        )
    if summary.get("flood_answers"):
        errors += "\n\nWhat the app answered the flood (one line per distinct answer):" + "".join(
            f"\n- `{e}`" for e in summary["flood_answers"]
        )
    hostile = f" beside {summary['hostile_sessions']} hostile ones" if summary.get("hostile_sessions") else ""
    if summary.get("flood_sessions"):
        hostile += f" and a one-address flood of {summary['flood_sessions']} sessions looping the largest replay"
    md.write_text(
        f"# Load: {summary['sessions']} concurrent gradio_client sessions{hostile} for {summary['duration_s']:.0f} s"
        "\n\n"
        f"`python benchmarks/load.py` on {machine}; 1-minute load average at the end {load_avg}. One app process "
        f"(loopback), policy `{summary['model']}`, requests past the fair-share gate (`MRTPO_MODEL_REQUESTS` "
        "slots, least-used client address first, one request per client at a time, a request gives its slot up "
        "after 1 s) and model forwards in fair turns; each session its own client address, the flood's sessions "
        "one, so "
        "latency includes the wait behind the other sessions. Each session replays the same example with its own "
        "response and information, then asks for the advantages of its own replay (from `gr.State`); a leak is an "
        "answer that holds another session's response, information or tokens. RSS is the server's, sampled every "
        f"2 s: after every session's {summary['warmup_rounds']} warm-up round(s), halfway through the measured "
        f"window, at the end, its maximum, and again {SETTLE_S:.0f} s after every session has stopped."
        f"\n\n| metric | value | goal |\n|---|---|---|\n{rows}\n\nErrors seen:{errors}\n",
        encoding="utf-8",
    )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sessions", type=int, default=16)
    p.add_argument("--duration", type=float, default=60.0, help="seconds of load after the start")
    p.add_argument("--max-requests", type=int, default=400, help="per session: a bound that ends every loop")
    p.add_argument("--threads", type=int, default=1, help="torch threads of the app (MRTPO_THREADS)")
    p.add_argument("--warmup", type=int, default=2, help="rounds per session before the measured window")
    p.add_argument(
        "--checkpoint",
        default=str(_common.BUNDLED_POLICY),
        help="a folder or a known model's name (e.g. smollm2-135m-instruct)",
    )
    p.add_argument("--hostile", type=int, default=0, help="hostile sessions beside --sessions benign ones")
    p.add_argument("--kinds", default="", help="comma list of hostile_inputs.KINDS to send (default: all)")
    p.add_argument("--flood", type=int, default=0, help="sessions of one client address looping the largest replay")
    p.add_argument(
        "--out",
        default=None,
        help="stem of the .csv and .md results (default results/load, or results/load_hostile with --hostile)",
    )
    p.add_argument("--requests-out", type=Path, default=None, help="also write every timed request to this JSON")
    args = p.parse_args(argv)
    summary = run(
        args.sessions,
        args.duration,
        args.max_requests,
        args.threads,
        args.checkpoint,
        args.warmup,
        args.hostile,
        tuple(k for k in args.kinds.split(",") if k),
        args.requests_out,
        args.flood,
    )
    stem = "load_flood" if args.flood else "load_hostile" if args.hostile else "load"
    out = Path(args.out or RESULTS / stem)
    out.parent.mkdir(parents=True, exist_ok=True)
    write(summary, out.with_suffix(".csv"), out.with_suffix(".md"), _common.machine(), _common.load_average())
    print("\n".join(f"{k}: {v}" for k, v in summary.items()))
    clean = summary["errors"] == 0 and summary["leaks"] == 0
    return 0 if clean and not summary.get("hostile_unanswered") and not summary.get("flood_unanswered") else 1


if __name__ == "__main__":
    sys.exit(main())
