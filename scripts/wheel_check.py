"""Check that the wheel works anywhere: build it, install it outside the checkout, and from a folder outside the
checkout run ``mrtpo-viz replay``, ``mrtpo-viz bench`` (which must say that it needs a checkout), the README's Python
snippet and ``mrtpo-viz serve`` (with a replay through the app's API) on the bundled policy.

    python scripts/wheel_check.py            # quick: the wheel in a --target folder, this interpreter's dependencies
    python scripts/wheel_check.py --venv     # a fresh virtual environment from the registry (a few minutes)

The quick form is what ``tests/test_wheel.py`` runs; ``--venv`` is the full check (torch is installed first, from
its pinned CPU wheel). Prints one line per check and exits non-zero on the first failure.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _smoke import free_port, replay_example, stop, wait_for_port  # noqa: E402

OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False"}


def run(cmd, **kw) -> subprocess.CompletedProcess:
    out = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if out.returncode != 0:
        raise SystemExit(f"FAILED: {' '.join(map(str, cmd))}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    return out


def build_wheel(dist: Path) -> Path:
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist), str(ROOT)])
    return next(dist.glob("mrtpo_viz-*.whl"))


def readme_snippet() -> str:
    """The README's first Python block (the Quick start's library example)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.search(r"```python\n(.*?)```", text, re.S).group(1)


def check_serve(python: str, cwd: Path, env: dict) -> str:
    """Start ``mrtpo_viz serve``, replay example 0 through the app's API, stop the server."""
    port = free_port()
    server = subprocess.Popen(
        [python, "-m", "mrtpo_viz", "serve", "--port", str(port)],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_port(server, port)
        return replay_example(f"http://127.0.0.1:{port}/")[0]
    finally:
        stop(server)


def check(python: str, env: dict, where: str) -> None:
    with tempfile.TemporaryDirectory(prefix="mrtpo-wheel-cwd-") as cwd:
        found = run([python, "-c", "import mrtpo_viz; print(mrtpo_viz.__file__)"], cwd=cwd, env=env).stdout.strip()
        assert found.startswith(where) and str(ROOT) not in found, found
        print(f"ok  import: {found}")
        out = run(
            [python, "-m", "mrtpo_viz", "replay", "--task", "tool_calling", "--example", "0"], cwd=cwd, env=env
        ).stdout
        assert "tool_calling-test-0300" in out and "tool_call.format: reward 1.00" in out, out[-2000:]
        print("ok  mrtpo-viz replay --task tool_calling --example 0")
        out = subprocess.run([python, "-m", "mrtpo_viz", "bench"], cwd=cwd, env=env, capture_output=True, text=True)
        assert out.returncode == 2 and "needs a source checkout" in out.stderr, (out.returncode, out.stderr[-2000:])
        print("ok  mrtpo-viz bench says it needs a checkout")
        run([python, "-c", readme_snippet()], cwd=cwd, env=env)
        assert (Path(cwd) / "relevance.csv").stat().st_size > 1000
        print("ok  the README's Python snippet")
        print(f"ok  mrtpo-viz serve: {check_serve(python, Path(cwd), env)}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--venv", action="store_true", help="a fresh virtual environment (downloads the dependencies)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="mrtpo-wheel-") as tmp:
        tmp = Path(tmp)
        wheel = build_wheel(tmp / "dist")
        print(f"ok  built {wheel.name} ({wheel.stat().st_size / 1e6:.1f} MB)")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | OFFLINE
        if args.venv:
            run([sys.executable, "-m", "venv", str(tmp / "venv")])
            python = str(tmp / "venv" / "bin" / "python")
            run([python, "-m", "pip", "install", "-q", "torch==2.13.0"])
            run([python, "-m", "pip", "install", "-q", str(wheel)])
            where = str(tmp / "venv")
        else:
            run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(tmp / "site"), str(wheel)])
            python, where = sys.executable, str(tmp / "site")
            env["PYTHONPATH"] = where
        print(f"ok  installed into {where}")
        check(python, env, where)
    print("the wheel works outside the checkout")
    return 0


if __name__ == "__main__":
    sys.exit(main())
