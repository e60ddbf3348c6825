"""The bundled tiny policy: its build (:mod:`.build`: tokenizer, model, the staged SFT), its training data
(:mod:`.sft_data`, with the content errors of :mod:`.violations`) and its held-out evaluation and model card
(:mod:`.evaluate`). ``python -m mrtpo_viz make-sample-policy`` runs :func:`.build.build_policy`."""
