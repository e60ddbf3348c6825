"""Threat: a GGUF file whose header declares more than it holds. ``gguf``'s reader allocates and walks what the
header declares, so a 52-byte file declaring a 2^40-element metadata array can run ``load_policy`` for minutes
into gigabytes. The metadata is now walked within the file and the caps before the reader sees it."""

import struct

import pytest

from mrtpo_viz import load_policy
from mrtpo_viz.policy import PolicyLoadError
from mrtpo_viz.policy.gguf import MAX_ARRAY_ITEMS, MAX_STRING_BYTES, check_bounds

from .bounded import bounded


def header(n_tensors: int = 0, n_kv: int = 1) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", 3, n_tensors, n_kv)


def kv_array(inner: int, count: int, key: bytes = b"abcd") -> bytes:
    return struct.pack("<Q", len(key)) + key + struct.pack("<I", 9) + struct.pack("<IQ", inner, count)


def test_a_52_byte_file_declaring_a_2_40_element_array(tmp_path):
    file = tmp_path / "bomb.gguf"
    file.write_bytes(header() + kv_array(0, 2**40))
    assert file.stat().st_size == 52
    with (
        bounded(),
        pytest.raises(
            PolicyLoadError,
            match=r"bomb.gguf is not a readable GGUF file \(a metadata "
            r"array declares 1,099,511,627,776 elements",
        ),
    ):
        load_policy(file, device="cpu")


@pytest.mark.parametrize(
    "body, says",
    [
        (kv_array(0, 2**20), "declares an array larger than the file"),  # under the cap, over the file
        (kv_array(8, MAX_ARRAY_ITEMS), "declares an array larger than the file"),  # strings: 8 bytes each at least
        (kv_array(9, 2**30), "at most 16,777,216"),
        (
            struct.pack("<Q", 2**40) + b"key",
            f"a metadata string declares 1,099,511,627,776 bytes; at most {MAX_STRING_BYTES:,}",
        ),
        (struct.pack("<Q", 4) + b"abcd" + struct.pack("<I", 99), "metadata value type 99 unknown"),
    ],
)
def test_declared_sizes_beyond_the_file_or_the_caps(tmp_path, body, says):
    file = tmp_path / "m.gguf"
    file.write_bytes(header() + body + b"\0" * 16)
    with bounded(), pytest.raises(PolicyLoadError, match=says.replace("(", r"\(")):
        load_policy(file, device="cpu")


def test_counts_of_pairs_and_tensors_beyond_the_file(tmp_path):
    file = tmp_path / "m.gguf"
    file.write_bytes(header(n_tensors=2**60, n_kv=0))
    with bounded(), pytest.raises(PolicyLoadError, match="declares its tensor count larger than the file"):
        load_policy(file, device="cpu")
    file.write_bytes(header(n_kv=2**62))
    with pytest.raises(PolicyLoadError, match="declares its key-value count larger than the file"):
        load_policy(file, device="cpu")


def test_a_real_gguf_file_passes_the_walk(tiny_policy_dir, tmp_path):
    from ..policy.gguf_files import need_gguf, write_gguf

    need_gguf()
    file = write_gguf(tiny_policy_dir, tmp_path / "tiny.gguf")
    with bounded():
        check_bounds(file)  # the tokenizer's string arrays, every tensor info: within the file
