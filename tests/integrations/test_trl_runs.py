"""Reading a TRL run: hand-built TRL completions files and token logs (exact numbers), uploads (zip members that try
to leave the folder, zip bombs, non-zips), and the 2-step run of examples/trl_mrtpo.py."""

import json
import math
import zipfile

import pandas as pd
import pytest

from mrtpo_viz.integrations import run_uploads, run_view, trl_log

NAMES = ["fmt", "ok"]


def trl_file(folder, step, rewards, prompts, advantages, conversational=True):
    """TRL's completions_{step:05d}.parquet: step, prompt, completion, one column per reward, extras, advantage."""
    folder.mkdir(parents=True, exist_ok=True)
    df = pd.DataFrame(
        {
            "step": step,
            "prompt": [[{"role": "user", "content": p}] if conversational else p for p in prompts],
            "completion": [
                [{"role": "assistant", "content": f"answer {i}"}] if conversational else f"answer {i}"
                for i in range(len(prompts))
            ],
            **{n: [r[k] for r in rewards] for k, n in enumerate(NAMES)},
            "mrtpo_token_advantages": [[0.5, -0.5]] * len(prompts),  # a log_extra column: a list, not a reward
            "advantage": advantages,
        }
    )
    df.to_parquet(folder / f"completions_{step:05d}.parquet")


PROMPTS = ["a", "a", "b", "b"]
REWARDS = [[1.0, 0.0], [0.0, 0.0], [1.0, 1.0], [1.0, math.nan]]


@pytest.fixture
def plain_run(tmp_path):
    for step in (1, 2):
        trl_file(tmp_path / "run" / "completions", step, REWARDS, PROMPTS, [0.7, -0.7, 0.3, -0.3])
    return tmp_path / "run"


def test_a_plain_trl_run_opens_from_its_completions(plain_run):
    run = run_view.open_run(plain_run)
    assert run.kind == "trl" and run.steps() == [("train", 1), ("train", 2)]
    assert run_view.reward_names(run) == NAMES  # the list-valued extra column is not a reward
    frame = run_view.step_frame(run, 2)
    assert frame["group"].tolist() == [0, 0, 1, 1] and frame["row"].tolist() == [0, 1, 2, 3]
    assert frame["prompt"].tolist() == PROMPTS and frame["completion"][1] == "answer 1"
    assert json.loads(frame["messages"][0]) == [{"role": "user", "content": "a"}]
    curves = run_view.reward_curves(run)
    assert curves["reward/fmt"].tolist() == [0.75, 0.75]
    assert curves["reward/ok"].tolist() == pytest.approx([1 / 3, 1 / 3])  # NaN (None) left out
    groups = run_view.groups_table(frame, NAMES)
    assert groups["mean fmt"].tolist() == [0.5, 1.0] and groups["max advantage"].tolist() == [0.7, 0.3]


def test_completions_filter_and_sort(plain_run):
    frame = run_view.step_frame(run_view.open_run(plain_run), 1)
    t = run_view.completions_table(frame, NAMES, sort_by="advantage", descending=True)
    assert t["row"].tolist() == [0, 2, 3, 1]
    assert run_view.completions_table(frame, NAMES, group=1)["row"].tolist() == [2, 3]
    assert run_view.completions_table(frame, NAMES, text="ANSWER 3")["row"].tolist() == [3]
    assert run_view.completions_table(frame, NAMES, sort_by="fmt")["row"].tolist() == [1, 0, 2, 3]  # stable
    assert run_view.completions_table(frame, NAMES, sort_by="nonsense")["row"].tolist() == [0, 1, 2, 3]
    assert run_view.completion_record(frame, 2)["prompt"] == "b"
    with pytest.raises(KeyError, match="no completion 9"):
        run_view.completion_record(frame, 9)


def test_plain_text_prompts_and_a_single_file(tmp_path):
    trl_file(tmp_path, 3, REWARDS, PROMPTS, [0.0] * 4, conversational=False)
    run = run_view.open_run(tmp_path / "completions_00003.parquet")
    assert run.steps() == [("train", 3)]
    frame = run_view.step_frame(run, 3)
    assert frame["completion"][0] == "answer 0" and frame["prompt"][2] == "b"
    with pytest.raises(KeyError, match="no train step 4"):
        run_view.step_frame(run, 4)


def test_not_a_run(tmp_path):
    with pytest.raises(FileNotFoundError, match="holds no run files"):
        run_view.open_run(tmp_path)
    (tmp_path / "x.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(ValueError, match="not a readable parquet"):
        run_view.open_run(tmp_path / "x.parquet")
    pd.DataFrame({"a": [1]}).to_parquet(tmp_path / "y.parquet")
    with pytest.raises(ValueError, match="y.parquet is not a run file of any format read here"):
        run_view.open_run(tmp_path / "y.parquet")


# ----------------------------------------------------------------------------------------------- uploads


def test_a_zip_upload_takes_run_files_only_and_never_leaves_its_folder(plain_run, tmp_path):
    up = tmp_path / "run.zip"
    with zipfile.ZipFile(up, "w") as zf:
        zf.write(plain_run / "completions" / "completions_00001.parquet", "out/completions/completions_00001.parquet")
        zf.writestr(
            "../../evil/completions_00002.parquet",
            (plain_run / "completions" / "completions_00002.parquet").read_bytes(),
        )
        zf.writestr("/etc/cron.d/tokens_00009.parquet", b"x")
        zf.writestr("notes.txt", b"ignored")
        zf.writestr("../run.json", json.dumps({"rewards": NAMES}))
    dest = tmp_path / "dest"
    got = run_uploads.extract_upload(up, dest, max_bytes=2**20)
    files = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())
    assert files == [
        "completions/completions_00001.parquet",
        "completions/completions_00002.parquet",
        "mrtpo/run.json",
        "mrtpo/tokens_00009.parquet",
    ]
    assert not (tmp_path / "evil").exists() and not list(tmp_path.parent.glob("evil"))
    run = run_view.open_run(got)
    assert [s for m, s in run.steps()] == [9]  # a token log (even a broken one) makes it an MRTPO run
    assert run.info == {"rewards": NAMES}


def test_upload_limits(tmp_path):
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("completions_00001.parquet", b"\0" * (12 * 2**20))  # 12 MiB of zeros: ~12 KiB compressed
    with pytest.raises(ValueError, match="unpacks to more than"):
        run_uploads.extract_upload(bomb, tmp_path / "d", max_bytes=2**20)
    assert not (tmp_path / "d").exists()
    with pytest.raises(ValueError, match="MiB are accepted"):
        run_uploads.extract_upload(bomb, tmp_path / "d", max_bytes=1000)
    (tmp_path / "a.txt").write_text("hello")
    with pytest.raises(ValueError, match="neither a .zip"):
        run_uploads.extract_upload(tmp_path / "a.txt", tmp_path / "d", max_bytes=2**20)
    empty = tmp_path / "empty.zip"
    with zipfile.ZipFile(empty, "w") as zf:
        zf.writestr("readme.md", "no run")
    with pytest.raises(ValueError, match="holds no run files"):
        run_uploads.extract_upload(empty, tmp_path / "d", max_bytes=2**20)


# ----------------------------------------------------------------------------------------------- an MRTPO run


def test_the_example_run_opens_with_its_token_log(trl_example_run):
    _, folder = trl_example_run
    run = run_view.open_run(folder)
    names = ["tool_call.format", "tool_call.correctness"]
    assert run.kind == "mrtpo" and run.steps() == [("train", 1), ("train", 2)]
    assert run_view.reward_names(run) == names and run.info["alpha"] == 1.0
    frame = run_view.step_frame(run, 2)
    trl = pd.read_parquet(folder / "completions" / "completions_00002.parquet")
    assert len(frame) == len(trl) == 8
    # the token log and TRL's own file hold the same completions, rewards and (sequence) advantages
    assert frame["completion"].tolist() == [c[-1]["content"] for c in trl["completion"]]
    for n in names:
        assert frame[trl_log.reward_column(n)].tolist() == pytest.approx(trl[n].tolist(), nan_ok=True)
    assert frame["advantage"].tolist() == pytest.approx(trl["advantage"].tolist(), abs=1e-6)
    means = frame["token_advantages"].map(lambda v: float(v.mean()))
    assert (means - frame["advantage"]).abs().max() <= 1e-5  # the token mean is TRL's sequence advantage
    spread = run_view.completions_table(frame, names, sort_by="token advantage spread", descending=True)
    assert spread["token advantage spread"].iloc[0] > 0.1  # MRTPO's advantages vary along a completion
    assert run_view.reward_curves(run)["step"].tolist() == [0, 1]  # TRL steps 1, 2 (the figure shows step + 1)
