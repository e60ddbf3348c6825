"""One convention for configuration help: the docstring under each field, read back, and put where TRL looks."""

import dataclasses

import pytest

from mrtpo_viz.docstrings import field_docs, help_from_docstrings


@help_from_docstrings
@dataclasses.dataclass
class Toy:
    rate: float = 0.5
    """How fast,
    on two lines."""
    plain: int = 1
    other: str = dataclasses.field(default="x", metadata={"kept": True})
    """The other one."""


def test_field_docs_reads_the_docstring_under_each_field_on_one_line():
    assert field_docs(Toy) == {"rate": "How fast, on two lines.", "other": "The other one."}


def test_help_from_docstrings_sets_the_help_metadata_and_keeps_the_rest():
    meta = {f.name: dict(f.metadata) for f in dataclasses.fields(Toy)}
    assert meta == {
        "rate": {"help": "How fast, on two lines."},
        "plain": {},
        "other": {"kept": True, "help": "The other one."},
    }


def test_mrtpo_config_help_is_its_docstrings_as_trl_parses_it():
    pytest.importorskip("trl")
    from transformers import HfArgumentParser

    from mrtpo_viz.integrations.trl import MRTPOConfig

    docs = field_docs(MRTPOConfig)
    assert set(docs) == {
        "alpha",
        "gamma",
        "credit",
        "control",
        "metric",
        "info_position",
        "log_tokens",
        "multi_objective_aggregation",
    }
    actions = {a.dest: a for a in HfArgumentParser(MRTPOConfig)._actions}
    assert all(actions[name].help == text for name, text in docs.items())
    assert actions["alpha"].default == 1.0 and actions["control"].default == "none"
