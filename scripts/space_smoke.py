"""Boot this repository the way a Hugging Face Space does, and time it.

A Space clones the repository, installs ``requirements.txt`` (plus the Gradio version of the README's front matter,
``sdk_version``) into a fresh environment of ``python_version``, sets ``GRADIO_SERVER_NAME=0.0.0.0``,
``SYSTEM=spaces`` and ``SPACE_ID`` (and no ``HF_HUB_OFFLINE``), and runs ``python app.py``. This script does the same
in a temporary folder, waits for the app, replays an example through ``/replay`` with ``gradio_client`` and reports
the boot time, the first replay's time and the server's peak memory.

    python scripts/space_smoke.py                 # prints the figures
    python scripts/space_smoke.py --out benchmarks/results/space_smoke.md   # and writes them (by hand, not in CI)
    python scripts/space_smoke.py --threads 2     # MRTPO_THREADS as the README advises for CPU Basic

CI runs it after the tests (a fresh venv each time: ~2-3 minutes, mostly pip).
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _smoke import PeakMemory, free_port, replay_example, stop, tracked_files, wait_for_port  # noqa: E402


def front_matter(readme: Path) -> dict[str, str]:
    """The README's YAML front matter as flat key -> value strings (the keys a Space reads)."""
    text = readme.read_text(encoding="utf-8")
    block = re.match(r"---\n(.*?)\n---\n", text, re.S).group(1)
    pairs = (line.split(":", 1) for line in block.splitlines() if ":" in line)
    return {k.strip(): v.strip().strip('"') for k, v in pairs}


def clone(root: Path, dest: Path) -> None:
    """The tracked files, as a Space's clone has them (symbolic links kept)."""
    for rel in tracked_files(root):
        src, dst = root / rel, dest / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), dst)
        elif src.is_file():
            shutil.copy2(src, dst)


def install(venv: Path, space: Path, sdk_version: str) -> float:
    """A fresh venv with requirements.txt and the front matter's Gradio; seconds it took."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run(pip + ["torch==2.13.0"], check=True)  # first, so the CPU wheel is taken (requirements.txt pins it)
    subprocess.run(pip + ["-r", str(space / "requirements.txt"), f"gradio=={sdk_version}", "gradio_client"], check=True)
    return time.perf_counter() - start


def boot(venv: Path, space: Path, threads: int | None) -> dict:
    """Run ``python app.py`` as a Space does; boot seconds, first replay seconds, peak MiB."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "PYTHONPATH")}
    env.update(
        GRADIO_SERVER_NAME="0.0.0.0",
        GRADIO_SERVER_PORT=str(port),
        SYSTEM="spaces",
        SPACE_ID="mrtpo/mrtpo-viz-smoke",
        GRADIO_ANALYTICS_ENABLED="False",
    )
    if threads:
        env["MRTPO_THREADS"] = str(threads)
    start = time.perf_counter()
    server = subprocess.Popen(
        [str(venv / "bin" / "python"), "app.py"],
        cwd=space,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    memory = PeakMemory(server.pid)
    try:
        boot_s = wait_for_port(server, port)
        status, replay_s = replay_example(f"http://127.0.0.1:{port}/")
        first_s = time.perf_counter() - start - boot_s
        _, again_s = replay_example(f"http://127.0.0.1:{port}/")
    finally:
        peak = memory.stop()
        stop(server)
    return {
        "boot_s": boot_s,
        "first_call_s": first_s,
        "first_replay_s": replay_s,
        "warm_replay_s": again_s,
        "peak_mib": peak,
        "status": status,
    }


def report(fig: dict, install_s: float, meta: dict, threads: int | None) -> str:
    load = os.getloadavg()[0]
    return "\n".join(
        [
            "# Space smoke run",
            "",
            f"`python scripts/space_smoke.py{' --threads ' + str(threads) if threads else ''}`: a fresh venv from "
            f"requirements.txt + gradio=={meta['sdk_version']}, the Space environment (GRADIO_SERVER_NAME=0.0.0.0, "
            "SYSTEM=spaces, SPACE_ID, no HF_HUB_OFFLINE), `python app.py`, then /load_checkpoint and /replay (tool "
            "calling example 0, 2 verifiers) through gradio_client.",
            "",
            f"Machine: {os.cpu_count()} CPUs ({platform.machine()}), Python {platform.python_version()}, load average "
            f"{load:.1f} at the end; the bundled policy, no GPU.",
            "",
            "| measure | value |",
            "|---|---:|",
            f"| install (venv + pip) | {install_s:.0f} s |",
            f"| boot: `python app.py` until the port answers | {fig['boot_s']:.1f} s |",
            f"| first call: load the policy and replay | {fig['first_call_s']:.1f} s |",
            f"| first replay (policy loaded) | {fig['first_replay_s']:.2f} s |",
            f"| second replay | {fig['warm_replay_s']:.2f} s |",
            f"| server peak memory (process tree) | {fig['peak_mib']:.0f} MiB |",
            "",
            f"Status line: {fig['status']}",
            "",
        ]
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="write the figures as markdown here")
    ap.add_argument("--threads", type=int, default=None, help="MRTPO_THREADS for the app")
    args = ap.parse_args(argv)
    meta = front_matter(ROOT / "README.md")
    assert meta["app_file"] == "app.py" and meta["sdk"] == "gradio", meta
    with tempfile.TemporaryDirectory(prefix="mrtpo-space-") as tmp:
        space, venv = Path(tmp) / "space", Path(tmp) / "venv"
        clone(ROOT, space)
        install_s = install(venv, space, meta["sdk_version"])
        fig = boot(venv, space, args.threads)
    text = report(fig, install_s, meta, args.threads)
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
