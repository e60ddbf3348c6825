"""Which reduced precision this CPU runs natively: chosen per machine at load time, float32 otherwise.

bfloat16 matmuls are fast only where the CPU has bfloat16 instructions (AVX-512 BF16, AMX); elsewhere torch emulates
them and a bfloat16 forward was ~5x SLOWER than float32 (NOTES: an AMD EPYC with AVX2 only). So a reduced-precision
replay is offered only where :func:`native_bf16` holds, and float32 stays the default everywhere (docs/performance.md
says what was measured of its agreement with float32, and where).
"""

from __future__ import annotations

import functools
import platform
from pathlib import Path

BF16_FLAGS = ("avx512_bf16", "amx_bf16")
"""CPU flags (``/proc/cpuinfo``) that make bfloat16 matmuls native."""
SHOWN_FLAGS = ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8", "amx_tile")


@functools.cache
def _cpuinfo() -> tuple[str, frozenset[str]]:
    model, flags = platform.processor() or "unknown CPU", frozenset()
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return model, flags
    for line in lines:
        key, _, value = line.partition(":")
        if key.strip() == "model name" and model in ("", "unknown CPU", platform.processor()):
            model = value.strip()
        elif key.strip() == "flags" and not flags:
            flags = frozenset(value.split())
    return model, flags


def cpu_model() -> str:
    return _cpuinfo()[0]


def cpu_flags() -> frozenset[str]:
    """The CPU's flags as Linux reports them (empty where there is no ``/proc/cpuinfo``)."""
    return _cpuinfo()[1]


def native_bf16() -> bool:
    """Whether this CPU multiplies bfloat16 natively (AVX-512 BF16 or AMX)."""
    return any(f in cpu_flags() for f in BF16_FLAGS)


def describe_cpu() -> str:
    """E.g. ``"AMD EPYC; avx2 fma; no avx512f avx512_vnni avx512_bf16 amx_bf16 amx_int8 amx_tile"``."""
    have = [f for f in SHOWN_FLAGS if f in cpu_flags()]
    lack = [f for f in SHOWN_FLAGS if f not in cpu_flags()]
    return f"{cpu_model()}; {' '.join(have) or 'none of the vector flags'}" + (f"; no {' '.join(lack)}" if lack else "")


def reduced_precision_note() -> str:
    """One line for the app and the results files: whether a bfloat16 replay would run natively here."""
    if native_bf16():
        return "bfloat16 runs natively on this CPU (opt-in; float32 is the default)"
    return "bfloat16 replay off: this CPU has no avx512_bf16 / amx_bf16 (emulated bfloat16 is slower than float32)"
