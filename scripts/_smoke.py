"""Shared by the smoke scripts (wheel_check.py, space_smoke.py): start the app as a separate process, wait for it,
replay an example through its API, and watch the server's memory."""

from __future__ import annotations

import socket
import json
import subprocess
import threading
import time
from pathlib import Path

TEMPLATE = "\n\n[Verifier: {title}] {info}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(server: subprocess.Popen, port: int, timeout_s: float = 300) -> float:
    """Seconds until the server accepts connections; SystemExit with its output if it dies first."""
    start = time.perf_counter()
    while time.perf_counter() - start < timeout_s:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return time.perf_counter() - start
        except OSError:
            if server.poll() is not None:
                raise SystemExit(
                    f"FAILED: the app exited with {server.returncode}\n"
                    f"{(server.stderr.read() if server.stderr else '')[-3000:]}"
                ) from None
            time.sleep(0.25)
    raise SystemExit(f"FAILED: the app did not listen on port {port} within {timeout_s:.0f} s")


class PeakMemory:
    """Peak resident memory (MiB) of a process and its children, sampled every 0.2 s in a thread."""

    def __init__(self, pid: int):
        import psutil

        self.proc, self.peak_mib, self._stop = psutil.Process(pid), 0.0, threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _rss(self) -> float:
        import psutil

        try:
            procs = [self.proc, *self.proc.children(recursive=True)]
            return sum(p.memory_info().rss for p in procs) / 2**20
        except psutil.Error:
            return 0.0

    def _watch(self):
        while not self._stop.wait(0.2):
            self.peak_mib = max(self.peak_mib, self._rss())

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.peak_mib


def replay_example(url: str, checkpoint: str = "tiny-mrtpo") -> tuple[str, float]:
    """Load the checkpoint and replay tool-calling example 0 through the app's API: (status line, replay seconds)."""
    from gradio_client import Client

    from mrtpo_viz.tasks import VERIFIERS, load_examples

    client = Client(url, verbose=False, analytics_enabled=False)
    try:
        status = client.predict(checkpoint, api_name="/load_checkpoint")
        assert "**Loaded**" in status, status
        ex = load_examples("tool_calling")[0]
        infos = [VERIFIERS[n].info(ex) for n in ex.verifiers]
        start = time.perf_counter()
        out = client.predict(
            checkpoint,
            "tool_calling",
            0,
            ex.messages()[-1]["content"],
            ex.reference,
            list(ex.verifiers),
            "user_end",
            "js",
            "none",
            TEMPLATE,
            *(infos + [""] * 6)[:6],
            api_name="/replay",
        )
        seconds = time.perf_counter() - start
        tokens = json.loads(out[0]["value"] if isinstance(out[0], dict) else out[0])["tokens"]
        assert len(tokens) > 5, str(out)[:500]  # the token view's payload (its script ships in the wheel)
        return status, seconds
    finally:
        client.close()


def stop(server: subprocess.Popen) -> None:
    server.terminate()
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()


def tracked_files(root: Path) -> list[str]:
    """The checkout's tracked files (what a Space clones)."""
    out = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True)
    return [line for line in out.stdout.splitlines() if line]
