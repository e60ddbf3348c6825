"""Deterministic generators of the sample examples, one module per task family.

Each family module exposes ``generate(n, seed) -> list[Example]`` (every example with a gold ``reference``).
``scripts/make_sample_data.py`` writes the bundled ``sample_data/tasks/<task>.jsonl`` from them; :func:`generate`
runs the one of a task (the only place that imports them by name).
"""

import importlib

FAMILY_MODULES = {
    "tool_calling": "mrtpo_viz.tasks.generators.tool_calling",
    "text_to_sql": "mrtpo_viz.tasks.generators.text_to_sql",
    "instruction_following": "mrtpo_viz.tasks.generators.instruction_following",
    "slots": "mrtpo_viz.tasks.generators.slots",
}


def generate(task: str, n: int, seed: int) -> list:
    """``n`` examples of ``task``'s generator (one of ``FAMILY_MODULES``), deterministic for ``seed``."""
    if task not in FAMILY_MODULES:
        raise ValueError(f"no generator for task {task!r}; the generated tasks are {sorted(FAMILY_MODULES)}")
    return importlib.import_module(FAMILY_MODULES[task]).generate(n, seed=seed)


def draw_unique(draw, seen: set, tries: int = 5):
    """Call ``draw() -> Example`` until its prompt is not in ``seen`` (at most ``tries`` times, then accept a repeat),
    so a sample of a few hundred holds no repeated prompt (train and test stay disjoint) and large ones never stall."""
    for _ in range(tries):
        ex = draw()
        if ex.prompt not in seen:
            break
    seen.add(ex.prompt)
    return ex
