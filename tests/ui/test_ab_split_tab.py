"""The A/B tab's "compare over N examples" handlers on the bundled policy: progress per case, the summary, table and
CSV of the library's numbers, Stop keeping the cases done, a bad N read as a message, and a case opened in the
single-example view with its wordings as filled in."""

import pandas as pd
import pytest

from mrtpo_viz.relevance import ab_split
from mrtpo_viz.ui import ab_split_tab as tab
from mrtpo_viz.ui.example_picker import examples, prompt_text
from mrtpo_viz.ui.result_state import StopFlag

ARGS = ("tool_calling", None, 3, False, "tool_call.format", "{own}", "{description}", "user_end", "js", "none")


def test_a_split_streams_progress_then_the_sorted_cases_and_a_csv(checkpoint):
    outs = list(tab.compare_split(checkpoint, *ARGS, StopFlag(), progress=lambda *a, **k: None))
    assert outs[0][0].startswith("Comparing over the tool_calling test split: 0 / 6 cases")
    assert [o[0] for o in outs[1:-1]] == [
        f"Comparing over the tool_calling test split: {i} / 6 cases." for i in range(1, 7)
    ]
    status, fig, table, download, picker, state = outs[-1]
    rows = state["rows"]
    s = ab_split.summarize(rows)
    assert status.startswith(
        f"6 / 6 cases of 3 examples: B - A in span mass, mean {tab.viz.fmt_sig(s.mean_difference, signed=True)}"
    )
    assert list(table["B - A"]) == [tab.viz.fmt_sig(r.difference, signed=True) for r in ab_split.sorted_rows(rows)]
    saved = pd.read_csv(download["value"])
    assert list(saved["span_mass_b_minus_a"]) == pytest.approx([r.difference for r in rows])
    assert [b.y for b in fig.data][0] == pytest.approx(sorted(r.difference for r in rows))
    worst = ab_split.sorted_rows(rows)[0]
    assert picker["value"] == 0 and picker["choices"][0][0].startswith(f"1. {worst.example} · {worst.verifier}")
    opened = tab.open_case(state, 0)
    case = next(c for c in state["cases"] if (c.example.id, c.verifier) == (worst.example, worst.verifier))
    assert opened[0]["value"] == "tool_calling" and opened[4]["value"] == worst.verifier
    assert opened[2:4] == (prompt_text(case.example), case.example.reference)
    assert (opened[5], opened[6]) == (case.info_a, case.info_b)
    assert examples("tool_calling")[opened[1]["value"]].id == worst.example  # its place in the example picker


def test_stop_keeps_the_cases_done(checkpoint):
    flag = StopFlag()
    gen = tab.compare_split(checkpoint, *ARGS, flag, progress=lambda *a, **k: None)
    next(gen)  # 0 / 6
    next(gen)  # 1 / 6
    tab.stop_split(flag)
    status, fig, table, download, picker, state = next(gen)
    assert status.startswith("**Stopped after 2** of 6 cases") and len(table) == 2 and len(state["rows"]) == 2
    assert len(pd.read_csv(download["value"])) == 2
    with pytest.raises(StopIteration):
        next(gen)
    assert not flag.running


def test_bad_input_reads_as_a_message(checkpoint):
    with pytest.raises(ValueError, match="N must lie between 1 and 40"):
        next(tab.compare_split(checkpoint, "tool_calling", None, 0, *ARGS[3:]))
    with pytest.raises(ValueError, match="No case in the first 2 examples"):
        next(tab.compare_split(checkpoint, "tool_calling", None, 2, False, "", "same", "same", *ARGS[7:]))
    with pytest.raises(ValueError, match="Compare over N examples first"):
        tab.open_case(None, 0)
