"""Integrations with training frameworks (layer 6: above ``training`` and ``viz``, below ``ui``).

- :mod:`.trl`: ``MRTPOConfig`` / ``MRTPOTrainer``, MRTPO inside TRL's ``GRPOTrainer`` (needs ``pip install
  mrtpo-viz[trl]``); :mod:`.trl_batch` (datasets, rewards, the replay of a batch) and :mod:`.trl_log` (its metrics
  and per-token files) are its parts;
- :mod:`.run_formats`: the registry of run formats, one module each (:mod:`.trl_runs`: TRL's completions parquet
  and our per-token parquet; :mod:`.verl_runs`: verl's rollout dumps; :mod:`.prime_rl_runs`: prime-rl's token
  exports), pandas only; :mod:`.run_view`: a run of any of them read for the app's Runs view and ``score``;
  :mod:`.run_replay`: a logged completion replayed on demand.

Nothing is imported here: ``trl`` is an optional dependency.
"""
