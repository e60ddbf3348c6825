"""Training: GRPO, GDPO and MRTPO on the same policy, one :class:`StepMetrics` per step.

- :mod:`.config`: :class:`TrainConfig`; :mod:`.loop`: the run and one step (sample -> score -> relevance ->
  advantages -> loss -> update); :mod:`.rollouts`: the step's completions, rewards and log-probs;
  :mod:`.group_replay`: the replay of a whole group at once; :mod:`.metrics`: :class:`StepMetrics`;
- :mod:`.checkpoints`: atomic checkpoints and the metrics CSV; :mod:`.report`: statistics over runs;
  :mod:`.compare`: several methods x seeds.
"""

from .config import TrainConfig
from .loop import train
from .metrics import StepMetrics

__all__ = ["StepMetrics", "TrainConfig", "train"]
