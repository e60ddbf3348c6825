"""The public API (the README's names) resolves to the right objects, however the package was imported."""

import importlib
import importlib.util
import inspect
import sys

import mrtpo_viz


def test_replay_is_the_function_and_no_module_shares_its_name():
    from mrtpo_viz import replay

    assert inspect.isfunction(replay) and replay.__name__ == "replay"
    assert "verifiers" in inspect.signature(replay).parameters
    engine = sys.modules["mrtpo_viz.relevance.engine"]
    assert replay is engine.replay is importlib.import_module("mrtpo_viz.relevance").replay
    assert importlib.util.find_spec("mrtpo_viz.replay") is None


def test_every_public_name_resolves():
    for name in mrtpo_viz.__all__:
        assert getattr(mrtpo_viz, name) is not None, name
    from mrtpo_viz import Example, Relevance, Verifier, get_verifier, list_verifiers, load_examples, load_policy

    assert inspect.isclass(Example) and inspect.isclass(Relevance) and inspect.isclass(Verifier)
    assert "tool_call.format" in list_verifiers("tool_calling")
    assert get_verifier("sql.execution").task == "text_to_sql"
    assert len(load_examples("text_to_sql", split="test")) == 100
    assert callable(load_policy)
