"""Following a run that is being written (the Runs tab's Follow box): the handler on real files that grow between
two looks; a verl step file read only from where the last look stopped; TRL steps read once; bad lines and caps
as messages."""

import json

import gradio as gr
import pytest

from mrtpo_viz.integrations import run_files, run_view, verl_runs
from mrtpo_viz.ui import runs_follow, runs_tab
from tests.integrations.test_trl_runs import PROMPTS, REWARDS, trl_file

PROMPT = "system\nAnswer briefly.\nuser\nName a color.\nassistant\n"


def line(i: int, acc, fmt=1.0) -> str:
    """One rollout as verl's ``_dump_generations`` writes it (one JSON object and a newline)."""
    row = {"input": PROMPT, "output": f"out {i}", "gts": "red", "score": acc, "step": 1, "acc": acc, "fmt": fmt}
    return json.dumps(row) + "\n"


def follow(state, followed):
    return runs_follow.follow_run(runs_tab._run, state, followed)


def append(path, text: str) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text)


def curve(fig, panel: int = 0) -> tuple[list, list]:
    return list(fig.data[panel].x), list(fig.data[panel].y)


@pytest.fixture
def runs(tmp_path, monkeypatch):
    monkeypatch.setenv("MRTPO_RUNS_DIR", str(tmp_path))
    (tmp_path / "dump").mkdir()
    (tmp_path / "dump" / "1.jsonl").write_text(line(0, 1.0) + line(1, 0.0), encoding="utf-8")
    return tmp_path


def test_a_growing_verl_dump_is_followed_line_by_line(runs, monkeypatch):
    state, _, fig, steps = runs_tab.open_run("dump", None)
    assert state["names"] == ["acc", "fmt"] and steps["choices"] == [("step 1", "train:1")]
    parsed = []
    real_row = verl_runs._row
    monkeypatch.setattr(verl_runs, "_row", lambda line, name, no: parsed.append((name, no)) or real_row(line, name, no))

    followed, fig, picker, note = follow(state, None)
    assert curve(fig) == ([1], [0.5]) and picker["choices"] == [("step 1", "train:1")]
    assert note.startswith("Following: 1 step file(s), the last step 1") and parsed == [("1.jsonl", 1), ("1.jsonl", 2)]

    # nothing new: nothing read, nothing redrawn
    parsed.clear()
    assert follow(state, followed)[1:] == (runs_follow.gr.update(),) * 3 and parsed == []

    # step 1 grows by two lines and step 2 starts with one line and a half: only the new complete lines are read
    append(runs / "dump" / "1.jsonl", line(2, 1.0) + line(3, 1.0))
    half = line(5, 0.0)
    (runs / "dump" / "2.jsonl").write_text(line(4, 1.0) + half[:30], encoding="utf-8")
    followed, fig, picker, note = follow(state, followed)
    assert parsed == [("1.jsonl", 3), ("1.jsonl", 4), ("2.jsonl", 1)]
    assert curve(fig) == ([1, 2], [0.75, 1.0])
    assert picker["choices"] == [("step 1", "train:1"), ("step 2", "train:2")] and "value" not in picker
    assert "the last step 2" in note and "read just now: step 1, step 2" in note

    # the half line is finished: step 2's mean takes it in, line 2 of its file
    parsed.clear()
    append(runs / "dump" / "2.jsonl", half[30:])
    followed, fig, _, _ = follow(state, followed)
    assert parsed == [("2.jsonl", 2)] and curve(fig) == ([1, 2], [0.75, 0.5])
    # the same means as a whole read of the finished run
    whole = run_view.reward_curves(run_view.open_run(runs / "dump"))
    assert whole["reward/acc"].tolist() == [0.75, 0.5] and curve(fig, 1)[1] == whole["reward/fmt"].tolist()

    # a rewritten file (same name, other first line) is read again from its start
    parsed.clear()
    (runs / "dump" / "1.jsonl").write_text(line(9, 0.0) + line(8, 0.0) + line(7, 0.0) + line(6, 0.0) + line(5, 1.0))
    followed, fig, _, _ = follow(state, followed)
    assert [n for _, n in parsed] == [1, 2, 3, 4, 5] and curve(fig) == ([1, 2], [0.2, 0.5])


def test_a_trl_run_gets_its_new_steps_and_keeps_the_old_ones_unread(tmp_path, monkeypatch):
    monkeypatch.setenv("MRTPO_RUNS_DIR", str(tmp_path))
    folder = tmp_path / "trl" / "completions"
    trl_file(folder, 1, REWARDS, PROMPTS, [0.7, -0.7, 0.3, -0.3])
    state, *_ = runs_tab.open_run("trl", None)
    followed, fig, _, _ = follow(state, None)
    assert curve(fig) == ([1], [0.75])
    read = []
    real_means = run_view.step_means
    monkeypatch.setattr(run_view, "step_means", lambda run, *key: read.append(key[:2]) or real_means(run, *key))
    trl_file(folder, 2, [[0.0, 1.0]] * 4, PROMPTS, [0.0] * 4)
    followed, fig, picker, note = follow(state, followed)
    assert read == [("train", 2)]  # step 1 was not read again
    assert curve(fig) == ([1, 2], [0.75, 0.0]) and curve(fig, 1) == ([1, 2], [pytest.approx(1 / 3), 1.0])
    assert [c[1] for c in picker["choices"]] == ["train:1", "train:2"] and "read just now: step 2." in note


def test_bad_lines_and_caps_are_messages_naming_the_file_and_line(runs, monkeypatch):
    state, *_ = runs_tab.open_run("dump", None)
    followed = follow(state, None)[0]
    append(runs / "dump" / "1.jsonl", line(2, 1.0) + line(3, "high"))
    with pytest.raises(gr.Error, match=r"1\.jsonl:4: 'score' must be a number \(or null\), got text"):
        follow(state, followed)
    (runs / "dump" / "1.jsonl").write_text(line(0, 1.0) + line(1, 0.0))
    append(runs / "dump" / "1.jsonl", json.dumps({"input": PROMPT, "output": "x", "fmt": 1.0}) + "\n")
    with pytest.raises(gr.Error, match=r"1\.jsonl:3: 'acc' must be a number \(or null\) on every line"):
        follow(state, followed)
    # the caps of a whole read hold for what is appended: lines of a step file, bytes of a line
    (runs / "dump" / "1.jsonl").write_text(line(0, 1.0) + line(1, 0.0))
    followed = follow(state, None)[0]
    monkeypatch.setattr(verl_runs, "MAX_STEP_ROWS", 3)
    append(runs / "dump" / "1.jsonl", line(2, 1.0) + line(3, 1.0))
    with pytest.raises(gr.Error, match=r"1\.jsonl has more than 3 lines; a verl step file here has at most 3"):
        follow(state, followed)
    monkeypatch.setattr(verl_runs, "MAX_STEP_ROWS", 50)
    monkeypatch.setattr(verl_runs, "MAX_LINE_BYTES", 400)
    append(runs / "dump" / "1.jsonl", '{"input": "' + "x" * 500)  # half a line, already past the cap
    with pytest.raises(gr.Error, match=r"1\.jsonl:5: the line is longer than"):
        follow(state, followed)


def test_the_curve_row_cap_holds_while_following(runs, monkeypatch):
    for step in (2, 3):
        (runs / "dump" / f"{step}.jsonl").write_text(line(0, 1.0) + line(1, 1.0), encoding="utf-8")
    state, *_ = runs_tab.open_run("dump", None)
    monkeypatch.setattr(run_files, "MAX_CURVE_ROWS", 4)
    _, fig, picker, note = follow(state, None)
    assert curve(fig) == ([1, 2], [0.5, 1.0]) and len(picker["choices"]) == 3
    assert "The reward curves show the first 2 of 3 step files (4 rows" in note


def test_no_run_open_and_a_new_run_start_over(runs, tmp_path):
    followed, fig, picker, note = follow(None, None)
    assert followed is None and note.startswith("Open a run first")
    state, *_ = runs_tab.open_run("dump", None)
    followed = follow(state, None)[0]
    (runs / "other").mkdir()
    (runs / "other" / "4.jsonl").write_text(line(0, 0.25) + line(1, 0.75), encoding="utf-8")
    other, *_ = runs_tab.open_run("other", None)
    _, fig, picker, _ = follow(other, followed)  # the other run's cache is not this one's
    assert curve(fig) == ([4], [0.5]) and picker["choices"] == [("step 4", "train:4")]


def prime_rl_step(folder, step: int, rank: int, entropies: list[list[float]]) -> None:
    """One rank file of a prime-rl step: a sequence per entry (a 2-token prompt, then its response's entropies)."""
    from tests.integrations.prime_rl_fixture import sequence_record, write_lines

    records = []
    for line, ent in enumerate(entropies):
        T = 2 + len(ent)
        logp = [-1.0] * T
        records.append(sequence_record(step, rank, line, [5, 6], [7] * len(ent), 0.5, logp, [0.0, 0.0, *ent], "env"))
    write_lines(folder, step, rank, records)


def test_a_prime_rl_run_gets_new_step_folders_and_ranks(tmp_path, monkeypatch):
    monkeypatch.setenv("MRTPO_RUNS_DIR", str(tmp_path))
    prime_rl_step(tmp_path / "prime", 1, 0, [[1.0, 2.0], [3.0]])
    state, *_ = runs_tab.open_run("prime", None)
    followed, fig, _, _ = follow(state, None)
    entropy = 1  # the panels: advantage, entropy, mismatch_kl (the means over loss tokens)
    assert curve(fig, entropy) == ([1], [2.0])
    prime_rl_step(tmp_path / "prime", 2, 0, [[4.0]])
    followed, fig, picker, _ = follow(state, followed)
    assert curve(fig, entropy) == ([1, 2], [2.0, 4.0]) and [c[1] for c in picker["choices"]] == ["train:1", "train:2"]
    prime_rl_step(tmp_path / "prime", 2, 1, [[6.0, 8.0]])  # another rank of step 2 flushes
    followed, fig, _, note = follow(state, followed)
    assert curve(fig, entropy) == ([1, 2], [2.0, 6.0]) and "read just now: step 2." in note
    whole = run_view.reward_curves(run_view.open_run(tmp_path / "prime"))
    assert whole["reward/entropy"].tolist() == [2.0, 6.0]
    # the curves' row cap counts a step folder's sequences
    monkeypatch.setattr(run_files, "MAX_CURVE_ROWS", 2)
    _, fig, _, note = follow(state, None)
    assert curve(fig, entropy) == ([1], [2.0]) and "the first 1 of 2 step files (2 rows" in note
