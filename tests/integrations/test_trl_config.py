"""MRTPOConfig refuses bad values of its own fields with a message that names the field (issue 42, item 13)."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("trl", reason="the TRL integration tests need trl (pip install mrtpo-viz[trl])")

from mrtpo_viz.integrations.trl import MRTPOConfig  # noqa: E402


def make(tmp_path, **over):
    return MRTPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to=[], **over)


@pytest.mark.parametrize(
    "over, message",
    [
        (dict(gamma=math.nan), r"gamma must be a finite number in \[0, 100\], got nan"),
        (dict(gamma=math.inf), r"gamma must be a finite number in \[0, 100\], got inf"),
        (dict(gamma=1e308), r"gamma must be a finite number in \[0, 100\], got 1e\+308"),
        (dict(gamma=-0.5), r"gamma must be a finite number in \[0, 100\], got -0.5"),
        (dict(alpha="0.5"), r"alpha must be a finite number in \[0, 1\], got '0.5'"),
        (dict(alpha=math.nan), r"alpha must be a finite number in \[0, 1\], got nan"),
        (dict(alpha=1.5), r"alpha must be a finite number in \[0, 1\], got 1.5"),
        (dict(alpha=True), r"alpha must be a finite number in \[0, 1\], got True"),
        (dict(reward_weights=[math.nan]), r"reward_weights must be a list of finite numbers, got \[nan\]"),
        (dict(reward_weights=[1.0, math.inf]), r"reward_weights must be a list of finite numbers, got \[1.0, inf\]"),
        (dict(log_tokens="no"), r"log_tokens must be True or False, got 'no'"),
        (dict(num_generations=0), r"num_generations must be an integer >= 2 .* got 0"),
        (dict(num_generations=-3), r"num_generations must be an integer >= 2 .* got -3"),
        (dict(num_generations=1), r"num_generations must be an integer >= 2 .* got 1"),
        (dict(num_generations_eval=0), r"num_generations_eval must be an integer >= 1 .* got 0"),
    ],
)
def test_bad_fields_are_refused_by_name(tmp_path, over, message):
    with pytest.raises(ValueError, match=message):
        make(tmp_path, **over)


def test_good_fields_pass_unchanged(tmp_path):
    c = make(tmp_path, alpha=0, gamma=2.5, reward_weights=[1, 0.5], log_tokens=False, num_generations=4)
    assert (c.alpha, c.gamma, c.reward_weights, c.log_tokens, c.num_generations) == (0, 2.5, [1, 0.5], False, 4)
    assert make(tmp_path, gamma=100.0).gamma == 100.0 and make(tmp_path).reward_weights is None
