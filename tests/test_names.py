"""Every registry is keyed by the names of ``mrtpo_viz.names``, and every user of a name takes it from there."""

import pytest

from mrtpo_viz import names
from mrtpo_viz.advantages import ADVANTAGE_METHODS, get_method
from mrtpo_viz.cli import build_parser
from mrtpo_viz.divergence import METRIC_FUNCTIONS, get_metric
from mrtpo_viz.relevance.controls import CONTROL_SPECS, get_control
from mrtpo_viz.training.config import TrainConfig


def test_registries_are_keyed_by_the_names_in_order():
    assert tuple(ADVANTAGE_METHODS) == names.METHODS
    assert tuple(METRIC_FUNCTIONS) == names.METRICS
    assert tuple(CONTROL_SPECS) == names.CONTROLS


@pytest.mark.parametrize(
    "lookup,kind", [(get_method, "advantage method"), (get_metric, "metric"), (get_control, "control")]
)
def test_unknown_names_list_the_known_ones(lookup, kind):
    with pytest.raises(ValueError, match=rf"unknown {kind} 'nope'; choose one of \["):
        lookup("nope")


@pytest.mark.parametrize(
    "field,value", [("method", "ppo"), ("control", "drop"), ("metric", "mse"), ("info_position", "everywhere")]
)
def test_train_config_validates_with_the_names(field, value):
    with pytest.raises(ValueError, match=f"unknown {field.replace('_', ' ') if field != 'info_position' else field}"):
        TrainConfig(**{field: value})


def test_cli_choices_are_the_names(capsys):
    parser = build_parser()
    with pytest.raises(SystemExit):
        parser.parse_args(["score", "x.jsonl", "--out", "o.csv", "--metric", "mse"])
    err = capsys.readouterr().err
    assert all(repr(m) in err for m in names.METRICS)
    train = parser.parse_args(["train", "--out", "o", "--control", "others"])
    assert train.control == "others" and train.methods == ",".join(names.DEFAULT_METHODS)


def test_check_choice_returns_the_value():
    assert names.check_choice("metric", "js", names.METRICS) == "js"
