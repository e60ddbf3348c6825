"""Integrations with training frameworks (layer 6: above ``training`` and ``viz``, below ``ui``).

- :mod:`.trl`: ``MRTPOConfig`` / ``MRTPOTrainer``, MRTPO inside TRL's ``GRPOTrainer`` (needs ``pip install
  mrtpo-viz[trl]``); :mod:`.trl_batch` (datasets, rewards, the replay of a batch) and :mod:`.trl_log` (its metrics
  and per-token files) are its parts;
- :mod:`.trl_runs`: a TRL run's files (TRL's completions parquet, our per-token parquet) read into frames for the
  app's Runs view, pandas only; :mod:`.run_replay`: a logged completion replayed on demand.

Nothing is imported here: ``trl`` is an optional dependency.
"""
