"""Which reduced precision a CPU runs natively, read from /proc/cpuinfo: an Intel with AMX/AVX-512 BF16 offers a
bfloat16 replay, an AVX2-only AMD does not, and a machine without /proc/cpuinfo is described without failing."""

import pytest

from mrtpo_viz.policy import precision

AMD = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 7B13
flags\t\t: fpu sse2 avx avx2 fma bmi2
processor\t: 1
model name\t: AMD EPYC 7B13
flags\t\t: fpu sse2 avx avx2 fma bmi2
"""
SAPPHIRE = """processor\t: 0
model name\t: Intel(R) Xeon(R) Platinum 8481C
flags\t\t: avx2 fma avx512f avx512_vnni avx512_bf16 amx_bf16 amx_tile amx_int8
"""


@pytest.fixture
def cpuinfo(monkeypatch, tmp_path):
    """Point the reader at a file of our choosing (or at none), with the cache cleared before and after."""

    def use(text):
        path = tmp_path / "cpuinfo"
        if text is not None:
            path.write_text(text)
        real = precision.Path
        monkeypatch.setattr(precision, "Path", lambda p: path if p == "/proc/cpuinfo" else real(p))
        monkeypatch.setattr(precision.platform, "processor", lambda: "")
        precision._cpuinfo.cache_clear()

    yield use
    precision._cpuinfo.cache_clear()


def test_an_avx2_only_amd_has_no_native_bfloat16(cpuinfo):
    cpuinfo(AMD)
    assert precision.cpu_model() == "AMD EPYC 7B13"
    assert precision.cpu_flags() == frozenset({"fpu", "sse2", "avx", "avx2", "fma", "bmi2"})
    assert precision.native_bf16() is False
    assert precision.describe_cpu() == (
        "AMD EPYC 7B13; avx2 fma; no avx512f avx512_vnni avx512_bf16 amx_bf16 amx_int8 amx_tile"
    )
    assert precision.reduced_precision_note().startswith("bfloat16 replay off: this CPU has no avx512_bf16")


def test_an_intel_with_amx_runs_bfloat16_natively(cpuinfo):
    cpuinfo(SAPPHIRE)
    assert precision.native_bf16() is True
    assert precision.describe_cpu() == (
        "Intel(R) Xeon(R) Platinum 8481C; avx2 fma avx512f avx512_vnni avx512_bf16 amx_bf16 amx_int8 amx_tile"
    )
    assert precision.reduced_precision_note() == "bfloat16 runs natively on this CPU (opt-in; float32 is the default)"


def test_no_cpuinfo_is_described_without_failing(cpuinfo):
    cpuinfo(None)
    assert precision.cpu_model() == "unknown CPU"
    assert precision.cpu_flags() == frozenset()
    assert precision.native_bf16() is False
    assert precision.describe_cpu().startswith("unknown CPU; none of the vector flags; no avx2")
