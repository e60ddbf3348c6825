"""Threat: uploaded parquet and zip files that decompress without bound (many identical rows, one huge cell,
thousands of columns, a million-token row, a zip whose headers understate its sizes), and uploads larger than
MRTPO_MAX_UPLOAD_MB. Each is refused from the footer or while streaming, within the case budget."""

import json
import struct
import zipfile

import gradio as gr
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mrtpo_viz.integrations import run_files, run_uploads
from mrtpo_viz.ui import runs_tab

from .bounded import bounded


@pytest.fixture(autouse=True)
def no_runs_dir(monkeypatch):
    monkeypatch.delenv("MRTPO_RUNS_DIR", raising=False)
    monkeypatch.setenv("MRTPO_MAX_UPLOAD_MB", "5")


def write(table: pa.Table, path, **kw):
    pq.write_table(table, path, compression="zstd", **kw)
    return str(path)


def trl_table(n: int, prompt="p", completion="c", extra=None) -> pa.Table:
    return pa.table(
        {
            "step": pa.array([1] * n),
            "prompt": [prompt] * n,
            "completion": [completion] * n,
            "ok": pa.array([1.0] * n),
            **(extra or {}),
            "advantage": pa.array([0.0] * n),
        }
    )


def test_many_identical_rows_are_refused_from_the_footer(tmp_path):
    """The threat: a 385 KB file of 20M identical rows unpacks to gigabytes; the footer's row count refuses it."""
    up = write(trl_table(400_000), tmp_path / "completions_00001.parquet", use_dictionary=True)
    with bounded(), pytest.raises(gr.Error, match=r"400,000 rows; a run file here has at most 50,000"):
        runs_tab.open_run("", up)


def test_one_huge_cell_is_refused_from_the_footer_or_while_reading(tmp_path):
    """A few-KB file that holds one 30 MB string (a 200 MB one grows the server by 750 MB when materialized). Its
    footer says its column chunk is larger than one row can hold under the cell cap; where the rows are many, the
    chunk passes and the batch check refuses the cell."""
    up = write(trl_table(1, completion="a" * (30 * 2**20)), tmp_path / "completions_00001.parquet")
    with (
        bounded(),
        pytest.raises(
            gr.Error,
            match=r"a cell of column 'completion' holds more than 1024 KiB \(the "
            r"file says so\)",
        ),
    ):
        runs_tab.open_run("", up)
    table = pa.table(
        {
            "step": [1] * 40,
            "prompt": ["p"] * 40,
            "completion": ["a" * (3 * 2**20)] + ["c"] * 39,
            "ok": [1.0] * 40,
            "advantage": [0.0] * 40,
        }
    )
    up = write(table, tmp_path / "completions_00002.parquet", use_dictionary=False)
    with bounded(), pytest.raises(gr.Error, match=r"a cell of column 'completion' holds 3.0 MiB; at most 1024 KiB"):
        runs_tab.open_run("", up)


def test_a_footer_that_declares_more_than_the_cap_is_refused_before_reading(tmp_path, monkeypatch):
    monkeypatch.setenv("MRTPO_MAX_UPLOAD_MB", "1")  # 20 MiB decompressed per file
    up = write(trl_table(40, completion="b" * 2**20), tmp_path / "completions_00001.parquet")
    with bounded(), pytest.raises(gr.Error, match=r"unpacks to more than 20 MiB"):
        runs_tab.open_run("", up)


def test_ten_thousand_reward_columns_are_refused(tmp_path):
    """The threat: 10,000 reward columns take minutes and keep a core busy after the client has left."""
    extra = {f"r{i}": pa.array([1.0, 0.0]) for i in range(10_000)}
    up = write(trl_table(2, extra=extra), tmp_path / "completions_00001.parquet")
    with (
        bounded(),
        pytest.raises(
            gr.Error,
            match=r"footer is \d.\d MiB \(thousands of columns or row groups\); a run "
            r"file here has at most 512 columns",
        ),
    ):
        runs_tab.open_run("", up)  # refused from the footer's length, before the footer is parsed
    extra = {f"r{i}": pa.array([1.0, 0.0]) for i in range(1000)}
    up = write(trl_table(2, extra=extra), tmp_path / "completions_00002.parquet")
    with bounded(), pytest.raises(gr.Error, match=r"1,005 columns; a run file here has at most 512"):
        runs_tab.open_run("", up)  # a footer under 1 MiB: parsed, then its column count refuses it


def test_a_million_token_row_is_refused(tmp_path):
    """The threat: one row of a million token advantages holds the tab for over a minute."""
    n = 1_000_000
    table = pa.table(
        {
            "step": [1],
            "row": [0],
            "group": [0],
            "prompt": ["p"],
            "completion": ["c"],
            "advantage": [0.0],
            "token_advantages": pa.array([[0.0] * n]),
            "reward/ok": [1.0],
        }
    )
    up = write(table, tmp_path / "tokens_00001.parquet")
    with bounded(), pytest.raises(gr.Error, match=r"holds 1,000,000 items; at most 65,536"):
        runs_tab.open_run("", up)


def test_reading_stops_at_its_time_budget(tmp_path):
    """No thread keeps decoding after the budget: the check runs between batches of 256 rows."""
    path = tmp_path / "completions_00001.parquet"
    write(trl_table(5000), path, row_group_size=256)
    with bounded(), pytest.raises(run_files.RunFileError, match="took longer than 0 s to read and was stopped"):
        run_files.read_parquet(path, tmp_path, budget_s=0)


def understated_zip(path, size: int):
    """A zip of one run member of ``size`` zero bytes whose central directory claims 100 bytes."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        with zf.open("completions_00001.parquet", "w") as out:
            chunk = b"\0" * 2**20
            for _ in range(size // len(chunk)):
                out.write(chunk)
    data = bytearray(path.read_bytes())
    central = data.rindex(b"PK\x01\x02")
    data[central + 24 : central + 28] = struct.pack("<I", 100)  # uncompressed size
    path.write_bytes(bytes(data))


def test_a_zip_whose_headers_understate_its_sizes_stays_bounded(tmp_path):
    """The threat: ``ZipFile.read`` decompresses a member in one call, so such a zip reaches gigabytes before
    "Bad CRC-32". Members are now streamed in 1 MiB reads under a running cap, whatever the headers say."""
    up = tmp_path / "run.zip"
    understated_zip(up, 400 * 2**20)
    with bounded(extra_mb=150), pytest.raises(gr.Error, match="is not a readable zip"):
        runs_tab.open_run("", str(up))


def test_the_running_cap_stops_members_that_unpack_to_more_than_their_headers_say(tmp_path):
    up = tmp_path / "run.zip"
    with zipfile.ZipFile(up, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for step in range(1, 4):
            zf.writestr(f"completions_{step:05d}.parquet", b"\0" * (4 * 2**20))
    dest = tmp_path / "d"
    with bounded(), pytest.raises(ValueError, match=r"unpacks to more than"):
        run_uploads.extract_upload(up, dest, max_bytes=2**20)  # 10 MiB in all; 12 MiB inside
    with zipfile.ZipFile(up) as zf:  # the same cap, counted on the bytes that really come out
        budget = [5 * 2**20]
        (dest / "x").mkdir(parents=True)
        with zf.open("completions_00001.parquet") as src:
            run_files.copy_member(src, dest / "x" / "a", budget, "run.zip")
        with zf.open("completions_00002.parquet") as src, pytest.raises(run_files.RunFileError):
            run_files.copy_member(src, dest / "x" / "b", budget, "run.zip")
        assert not (dest / "x" / "b").exists()


def test_a_step_beyond_int64_in_a_member_name_is_not_a_run_file(tmp_path):
    """The threat: a step number beyond int64 (``completions_99999999999999999999.parquet``) crashing the reader."""
    up = tmp_path / "run.zip"
    with zipfile.ZipFile(up, "w") as zf:
        zf.writestr("completions_" + "9" * 20 + ".parquet", b"x")
    with bounded(), pytest.raises(gr.Error, match="holds no run files"):
        runs_tab.open_run("", str(up))


def test_uploads_over_the_cap_are_refused_while_they_stream_in(tmp_path, monkeypatch):
    """The threat: a 200 MB upload written to Gradio's cache and refused only afterwards. ``launch_options`` gives
    ``max_file_size`` from MRTPO_MAX_UPLOAD_MB, which Gradio's upload route enforces per file while it reads the
    body, and the serving guard, which caps the whole request at the same size (tests/hostile/test_serving.py)."""
    import httpx

    from mrtpo_viz.ui import launch_options

    from ..apphelpers import free_port

    monkeypatch.setenv("MRTPO_MAX_UPLOAD_MB", "1")
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "cache"))
    options = launch_options()
    assert options["max_file_size"] == 2**20
    with gr.Blocks() as demo:
        gr.File()
    _, url, _ = demo.launch(
        prevent_thread_lock=True,
        server_port=free_port(),
        quiet=True,
        max_file_size=options["max_file_size"],
        app_kwargs=options["app_kwargs"],
    )
    try:
        with bounded():
            big = httpx.post(f"{url}gradio_api/upload", files={"files": ("run.zip", b"\0" * (3 * 2**20))}, timeout=30)
            small = httpx.post(f"{url}gradio_api/upload", files={"files": ("run.zip", b"\0" * 1000)}, timeout=30)
    finally:
        demo.close()
    assert big.status_code == 413 and "over 1.0 MiB in all" in big.text
    assert small.status_code == 200
    stored = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert [p.stat().st_size for p in stored] == [1000]  # the refused body was never stored


def test_request_bodies_over_a_mebibyte_are_refused_before_gradio_reads_them(monkeypatch):
    """The threat: a 200,000-row rewards table (3.5 MB of JSON) that Gradio validated, copied and stored in its
    event loop for seconds, for every session, before the handler's 256-row cap saw it. The app's middleware
    answers 413 from the Content-Length (and counts a body sent without one); the handler never runs and the
    server keeps serving."""
    import httpx

    from mrtpo_viz.ui import launch_options
    from mrtpo_viz.serving.body_limit import MAX_BODY_BYTES

    from ..apphelpers import free_port

    calls = []
    with gr.Blocks() as demo:
        table, out = gr.Dataframe(), gr.Textbox()
        gr.Button().click(lambda t: calls.append(len(t)) or "ok", table, out, api_name="rows")
    options = launch_options()
    _, url, _ = demo.launch(
        prevent_thread_lock=True, server_port=free_port(), quiet=True, app_kwargs=options["app_kwargs"]
    )
    rows = [[str(i), i % 2, (i // 2) % 2] for i in range(200_000)]
    payload = {"data": [{"headers": ["response", "a", "b"], "data": rows}], "fn_index": 0, "session_hash": "x"}
    body = json.dumps(payload).encode()
    assert len(body) > MAX_BODY_BYTES
    try:
        with bounded():
            big = httpx.post(
                f"{url}gradio_api/queue/join", content=body, headers={"content-type": "application/json"}, timeout=30
            )

            def chunks():  # no Content-Length: counted as it streams
                for i in range(0, len(body), 2**16):
                    yield body[i : i + 2**16]

            streamed = httpx.post(f"{url}gradio_api/queue/join", content=chunks(), timeout=30)
            alive = httpx.get(f"{url}gradio_api/info", timeout=30)
    finally:
        demo.close()
    assert big.status_code == 413 and "over 1 MiB" in big.json()["detail"] and len(big.text) < 400
    assert streamed.status_code == 413
    assert alive.status_code == 200 and calls == []
