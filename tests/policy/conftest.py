"""Fixtures of the policy tests: the tiny policy as a GGUF file (needs the optional ``gguf`` package)."""

import pytest


@pytest.fixture(scope="session")
def tiny_gguf(tiny_policy_dir, tmp_path_factory):
    """The tiny test policy written as an F32 GGUF file, with the ``smollm`` pre-tokenizer named in its header."""
    from .gguf_files import need_gguf, write_gguf

    need_gguf()
    return write_gguf(tiny_policy_dir, tmp_path_factory.mktemp("gguf") / "tiny.gguf")
