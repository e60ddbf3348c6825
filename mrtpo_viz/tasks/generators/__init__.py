"""Deterministic generators of the sample examples, one module per task family.

Each family module exposes ``generate(n, seed) -> list[Example]`` (every example with a gold ``reference``).
``scripts/make_sample_data.py`` writes the bundled ``sample_data/tasks/<task>.jsonl`` from them.
"""
FAMILY_MODULES = {
    "tool_calling": "mrtpo_viz.tasks.generators.tool_calling",
    "text_to_sql": "mrtpo_viz.tasks.generators.text_to_sql",
    "instruction_following": "mrtpo_viz.tasks.generators.instruction_following",
    "slots": "mrtpo_viz.tasks.generators.slots",
}


def draw_unique(draw, seen: set, tries: int = 5):
    """Call ``draw() -> Example`` until its prompt is not in ``seen`` (at most ``tries`` times, then accept a repeat),
    so a sample of a few hundred holds no repeated prompt (train and test stay disjoint) and large ones never stall."""
    for _ in range(tries):
        ex = draw()
        if ex.prompt not in seen:
            break
    seen.add(ex.prompt)
    return ex
