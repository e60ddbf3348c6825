"""Deterministic generators of the sample examples, one module per task family.

Each family module exposes ``generate(n, seed) -> list[Example]`` (every example with a gold ``reference``).
``scripts/make_sample_data.py`` writes the bundled ``sample_data/tasks/<task>.jsonl`` from them.
"""
FAMILY_MODULES = {
    "tool_calling": "mrtpo_viz.taskgen.tool_calling",
    "text_to_sql": "mrtpo_viz.taskgen.text_to_sql",
    "instruction_following": "mrtpo_viz.taskgen.instruction_following",
}
