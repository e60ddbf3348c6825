"""A plain rollouts JSONL file given to ``score`` that is a special file: a fifo would block its reader for ever
waiting for a writer, a link to ``/dev/zero`` never ends. The reader (:func:`mrtpo_viz.relevance.rows.read_rows`,
under ``scoring.read_rollouts`` / ``score_rollouts`` and the CLI) opens it without blocking, sees it is not a
regular file and says so, as the run readers do (:func:`mrtpo_viz.integrations.run_files.open_regular`)."""

import os

import pytest

from mrtpo_viz.cli import main
from mrtpo_viz.relevance import scoring
from tests.hostile.bounded import bounded
from tests.hostile.test_run_file_values import unblocked

ROW = '{"id": "r1", "task": "tool_calling", "prompt": "hi", "response": "hello"}\n'


@pytest.fixture
def specials(tmp_path):
    os.mkfifo(tmp_path / "fifo.jsonl")
    os.symlink("/dev/zero", tmp_path / "zero.jsonl")
    return tmp_path


@pytest.mark.parametrize("name", ["fifo.jsonl", "zero.jsonl"])
def test_the_rollouts_reader_refuses_a_special_file_unread(specials, name):
    path = specials / name
    with unblocked(specials / "fifo.jsonl"), bounded(seconds=2, extra_mb=64):
        with pytest.raises(ValueError, match=rf"^{name} is not a regular file \(a fifo, a device or a link to one\); "):
            scoring.read_rollouts(path)
        with pytest.raises(ValueError, match="only regular files are read"):
            next(scoring.score_rollouts(None, path, out=specials / "out.jsonl"))  # refused before any replay
    assert not (specials / "out.jsonl").exists()


def test_a_regular_file_and_a_missing_one_still_read_as_before(specials):
    (specials / "rows.jsonl").write_text(ROW + "not json\n", encoding="utf-8")
    rows, problems = scoring.read_rollouts(specials / "rows.jsonl")
    assert [r["id"] for r in rows] == ["r1"] and [p[0] for p in problems] == [2]
    os.symlink(specials / "rows.jsonl", specials / "link.jsonl")  # a link to a regular file is that file
    assert [r["id"] for r in scoring.read_rollouts(specials / "link.jsonl")[0]] == ["r1"]
    with pytest.raises(FileNotFoundError, match="no rollouts file at"):
        scoring.read_rollouts(specials / "missing.jsonl")


@pytest.mark.parametrize("name", ["fifo.jsonl", "zero.jsonl"])
def test_score_on_a_special_file_exits_2_with_the_message(specials, name, capsys):
    with unblocked(specials / "fifo.jsonl"), bounded(seconds=15):  # the bundled policy loads first
        code = main(["score", str(specials / name), "--out", str(specials / "out.jsonl")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"{name} is not a regular file (a fifo, a device or a link to one); only regular files are read" in err
    assert "Traceback" not in err and not (specials / "out.jsonl").exists()
