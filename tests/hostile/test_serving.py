"""Threat: one client taking a public server down through its HTTP surface: a body smuggled past the cap, a route
that skips the cap by its name, uploads that store without bound, session hashes that grow state without bound,
and one client's many sessions or requests crowding out everyone else (issue 42, root causes 1-5).

One guarded app (``launch_options()``: the serving guard, ``MRTPO_MAX_UPLOAD_MB=1``) serves every case; each test
speaks for its own client address (``X-Forwarded-For``, which uvicorn takes from a loopback peer), so the per-client
caps of one test do not touch another's. Each case ends within the case budget (``bounded``), and every refusal
names the input and the limit. The last tests of each group are the other side: a legitimate upload, streamed body
or replay still works, so a cap set too strict fails too.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import httpx
import pytest

gr = pytest.importorskip("gradio")

from mrtpo_viz.serving import sessions as sessions_mod  # noqa: E402
from mrtpo_viz.serving.body_limit import MAX_BODY_BYTES  # noqa: E402
from mrtpo_viz.serving.guard import IN_FLIGHT_PER_CLIENT  # noqa: E402

from ..apphelpers import free_port  # noqa: E402
from .bounded import bounded  # noqa: E402

MIB = 2**20


class App:
    """The launched app: its url, host and port, Gradio's upload folder, and what its handlers saw."""

    def __init__(self, demo, url: str, cache: Path, seen: list):
        self.demo, self.url, self.cache, self.seen = demo, url, cache, seen
        self.port = int(url.rstrip("/").rsplit(":", 1)[1])

    def stored(self) -> list[int]:
        return sorted(p.stat().st_size for p in self.cache.rglob("*") if p.is_file())

    def queue(self):
        return self.demo._queue


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    from mrtpo_viz.ui import launch_options

    cache = tmp_path_factory.mktemp("gradio-cache")
    saved = {k: os.environ.get(k) for k in ("MRTPO_MAX_UPLOAD_MB", "GRADIO_TEMP_DIR")}
    os.environ.update(MRTPO_MAX_UPLOAD_MB="1", GRADIO_TEMP_DIR=str(cache))
    seen: list = []
    try:
        options = launch_options()
        with gr.Blocks() as demo:
            upload, text = gr.File(type="filepath"), gr.Textbox()
            gr.Button().click(lambda p: seen.append(p) or "took it", upload, text, api_name="take")
            gr.Button().click(lambda x: seen.append(len(x)) or "echo", text, text, api_name="echo")
            gr.Button().click(lambda x: time.sleep(2) or x, text, text, api_name="slow")
        _, url, _ = demo.launch(
            prevent_thread_lock=True,
            server_port=free_port(),
            quiet=True,
            max_file_size=options["max_file_size"],
            app_kwargs=options["app_kwargs"],
            state_session_capacity=options["state_session_capacity"],
        )
        yield App(demo, url, cache, seen)
        demo.close()
    finally:
        for k, v in saved.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)


def as_client(address: str) -> dict:
    return {"x-forwarded-for": address}


def join(app: App, session: str, fn_index: int, data, address: str) -> httpx.Response:
    body = {"data": data, "fn_index": fn_index, "session_hash": session, "event_data": None, "trigger_id": None}
    return httpx.post(f"{app.url}gradio_api/queue/join", json=body, headers=as_client(address), timeout=30)


def result(app: App, session: str, address: str) -> dict:
    """The first completed event of ``session``, read from Gradio's event stream."""
    with httpx.stream(
        "GET",
        f"{app.url}gradio_api/queue/data",
        params={"session_hash": session},
        headers=as_client(address),
        timeout=30,
    ) as stream:
        for line in stream.iter_lines():
            if '"process_completed"' in line:
                return json.loads(line.removeprefix("data: "))
    raise AssertionError(f"no result for session {session}")


def raw(app: App, head: bytes, body: bytes = b"", close_after_s: float | None = None) -> bytes:
    """Send bytes on a socket as they are (no client library would send them); the answer, read up to its
    declared length (the server may answer before the whole body is sent)."""
    with socket.create_connection(("127.0.0.1", app.port), timeout=10) as s:
        try:
            s.sendall(head + body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # answered and closed before the rest of the body was read
        if close_after_s is not None:
            time.sleep(close_after_s)
            return b""
        data = b""
        try:
            while chunk := s.recv(65536):
                data += chunk
                top, _, rest = data.partition(b"\r\n\r\n")
                length = [int(h.split(b":")[1]) for h in top.split(b"\r\n") if h.lower().startswith(b"content-length:")]
                if length and len(rest) >= length[0]:
                    break
        except (TimeoutError, ConnectionResetError):
            pass
    return data


def chunked(data: bytes, size: int = 2**16) -> bytes:
    parts = [b"%x\r\n%s\r\n" % (len(data[i : i + size]), data[i : i + size]) for i in range(0, len(data), size)]
    return b"".join(parts) + b"0\r\n\r\n"


# ------------------------------------------------------------------------ 1. smuggling past the body limit


def test_both_content_length_and_transfer_encoding_are_refused(app):
    """The threat: ``Content-Length: 100`` beside ``Transfer-Encoding: chunked``; the old limit trusted the first
    while the server decoded the second (200 MiB read, +723 MB). RFC 9112: ambiguous framing is an error."""
    before = list(app.seen)
    payload = json.dumps({"data": ["x" * (3 * MIB)], "fn_index": 1, "session_hash": "smuggle1"}).encode()
    head = (
        b"POST /gradio_api/queue/join HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    with bounded():
        answer = raw(app, head, chunked(payload))
    assert answer.startswith(b"HTTP/1.1 400"), answer[:200]
    # the guard's message; with uvicorn's httptools parser (installed with uvicorn[standard]) the server itself
    # refuses such a request before the app sees it, and the guard is the second line (tests/serving)
    assert b"both Content-Length and Transfer-Encoding" in answer or b"Invalid HTTP request" in answer, answer
    assert app.seen == before


def test_a_chunked_body_is_counted_as_it_streams(app):
    """No Content-Length at all: the body is counted while it arrives and refused past 1 MiB."""
    payload = json.dumps({"data": ["x" * (3 * MIB)], "fn_index": 1, "session_hash": "smuggle2"}).encode()
    head = b"POST /gradio_api/queue/join HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    head += b"Transfer-Encoding: chunked\r\n\r\n"
    with bounded():
        answer = raw(app, head, chunked(payload))
    assert answer.startswith(b"HTTP/1.1 413") and b"over 1 MiB" in answer, answer[:300]


def test_a_legitimate_streamed_body_still_works(app):
    """The other side: a chunked body under the cap is taken (refusing every streamed body fails here)."""
    payload = json.dumps(
        {"data": ["y" * 200_000], "fn_index": 1, "session_hash": "streamok", "event_data": None, "trigger_id": None}
    ).encode()

    def parts():
        for i in range(0, len(payload), 2**15):
            yield payload[i : i + 2**15]

    with bounded():
        r = httpx.post(
            f"{app.url}gradio_api/queue/join", content=parts(), headers={"content-type": "application/json"}, timeout=30
        )
        assert r.status_code == 200, r.text
        assert result(app, "streamok", "127.0.0.1")["success"] is True
    assert 200_000 in app.seen


# ------------------------------------------------------------------------ 2. the limit by route, not by suffix


@pytest.mark.parametrize("path", ["gradio_api/call/upload", "gradio_api/call/v2/upload", "gradio_api/run/upload"])
def test_a_path_ending_in_upload_gets_the_one_mebibyte_cap(app, path):
    """The threat: the old limit let any path ending in ``/upload`` through; chunked 300 MiB to
    ``/gradio_api/call/upload`` was read whole (+986 MB). Only Gradio's real upload route has a larger cap."""
    head = f"POST /{path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n".encode()
    head += b"Transfer-Encoding: chunked\r\n\r\n"
    with bounded():
        answer = raw(app, head, chunked(b"x" * (3 * MIB)))
    assert answer.startswith(b"HTTP/1.1 413") and b"over 1 MiB" in answer, (path, answer[:300])


def test_the_upload_route_takes_a_file_up_to_the_upload_cap(app):
    """The other side: the upload route's cap is the upload cap (1 MiB here) plus the form's own bytes, so a file
    of exactly the cap is stored; with the 1 MiB body cap on this route (no exemption) it would be refused."""
    data = os.urandom(MIB)
    with bounded():
        r = httpx.post(
            f"{app.url}gradio_api/upload", files={"files": ("run.zip", data)}, headers=as_client("10.2.0.1"), timeout=30
        )
    assert r.status_code == 200, r.text
    assert MIB in app.stored()
    assert MAX_BODY_BYTES == MIB  # the body of this request was over the cap of every other route


# ------------------------------------------------------------------------ 3. the upload route's totals


def test_many_files_in_one_upload_are_capped_in_all(app):
    """The threat: Gradio caps each file only; 60 files of 4.5 MiB were stored (270 MiB, kept for an hour)."""
    before = app.stored()
    files = [("files", (f"f{i}.zip", b"\0" * 300_000)) for i in range(8)]
    with bounded():
        r = httpx.post(f"{app.url}gradio_api/upload", files=files, headers=as_client("10.3.0.1"), timeout=30)
    assert r.status_code == 413, r.text
    assert "over 1.0 MiB in all (files and form fields" in r.json()["detail"] and "nothing of it was kept" in r.text
    assert app.stored() == before  # nothing of it stayed in Gradio's cache


def test_a_huge_form_field_in_an_upload_is_refused(app):
    """The threat: a 300 MiB plain form field read into memory (+659 MB)."""
    before = app.stored()
    with bounded():
        r = httpx.post(
            f"{app.url}gradio_api/upload",
            data={"note": "n" * (4 * MIB)},
            files={"files": ("a.zip", b"PK")},
            headers=as_client("10.3.0.2"),
            timeout=30,
        )
    assert r.status_code == 413 and "over 1.0 MiB in all" in r.text, r.text
    assert app.stored() == before


def test_a_client_stores_at_most_its_share_of_uploads(app):
    """The threat: uploads under the cap, one after another, each kept an hour. One address stores at most
    CLIENT_SHARE uploads at the cap per hour; another address is not affected."""
    from mrtpo_viz.serving.uploads import CLIENT_SHARE

    def post(address: str, n: int) -> httpx.Response:
        blob = os.urandom(n)  # distinct contents: each is stored
        return httpx.post(
            f"{app.url}gradio_api/upload", files={"files": ("r.zip", blob)}, headers=as_client(address), timeout=30
        )

    with bounded(seconds=6):
        codes = [post("10.3.0.3", 900_000).status_code for _ in range(CLIENT_SHARE + 2)]
        other = post("10.3.0.4", 900_000)
    kept = sum(c == 200 for c in codes)
    assert kept in (CLIENT_SHARE, CLIENT_SHARE + 1) and codes[-1] == 413, codes  # the form's bytes count too
    last = post("10.3.0.3", 900_000)
    assert "upload share" in last.json()["detail"] and "MiB an hour" in last.text
    assert other.status_code == 200


def test_an_upload_answer_holds_no_server_path_and_the_file_still_works(app):
    """The threat: the answer showed Gradio's temporary folder. It names an alias now; a request that names the
    alias reaches the handler as the stored file, and the file route serves it."""
    with bounded():
        r = httpx.post(
            f"{app.url}gradio_api/upload", files={"files": ("run.zip", b"PK-alias")}, headers=as_client("10.3.0.5")
        )
        assert r.status_code == 200
        (name,) = r.json()
        assert name.startswith("gradio-upload/") and str(app.cache) not in r.text and "/tmp" not in r.text
        file_data = {"path": name, "orig_name": "run.zip", "meta": {"_type": "gradio.FileData"}}
        assert join(app, "alias1", 0, [file_data], "10.3.0.5").status_code == 200
        assert result(app, "alias1", "10.3.0.5")["success"] is True
        served = httpx.get(f"{app.url}gradio_api/file={name}", headers=as_client("10.3.0.5"))
    assert Path(app.seen[-1]).read_bytes() == b"PK-alias" and str(app.seen[-1]).startswith(str(app.cache))
    assert served.status_code == 200 and served.content == b"PK-alias"


def test_an_alias_cannot_climb_out_of_the_upload_folder(app):
    name = "gradio-upload/../../../etc/passwd"
    file_data = {"path": name, "orig_name": "p", "meta": {"_type": "gradio.FileData"}}
    with bounded():
        assert join(app, "alias2", 0, [file_data], "10.3.0.6").status_code == 200
        answer = result(app, "alias2", "10.3.0.6")
        served = httpx.get(f"{app.url}gradio_api/file={name}", headers=as_client("10.3.0.6"))
    assert answer["success"] is False and served.status_code in (403, 404)


def test_an_upload_dropped_halfway_leaves_nothing(app):
    """A client that sends half an upload and goes: Gradio's parser had begun a file in the upload folder."""
    before = app.stored()
    boundary = b"b0undary"
    part = b"--" + boundary + b'\r\nContent-Disposition: form-data; name="files"; filename="x.zip"\r\n\r\n'
    head = (
        b"POST /gradio_api/upload HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 10.3.0.7\r\n"
        b"Content-Type: multipart/form-data; boundary=" + boundary + b"\r\nContent-Length: 900000\r\n\r\n"
    )
    with bounded():
        raw(app, head, part + b"\0" * 400_000, close_after_s=0.5)
        deadline = time.monotonic() + 2
        while app.stored() != before and time.monotonic() < deadline:
            time.sleep(0.05)
    assert app.stored() == before


# ------------------------------------------------------------------------ 4. bounded session state


def test_an_over_long_session_hash_is_refused(app):
    """The threat: 300 joins with 512 kB session hashes (+1.33 GB): each hash a key in several of Gradio's maps."""
    with bounded():
        r = join(app, "h" * 512_000, 1, ["x"], "10.4.0.1")
        bad = join(app, "../../x", 1, ["x"], "10.4.0.1")
        escaped = httpx.post(  # the key spelt with a JSON escape is the same key to Gradio
            f"{app.url}gradio_api/queue/join",
            content='{"data": ["x"], "fn_index": 1, "session\\u005fhash": "' + "e" * 5000 + '"}',
            headers={"content-type": "application/json", **as_client("10.4.0.1")},
        )
        data = httpx.get(f"{app.url}gradio_api/queue/data", params={"session_hash": "q" * 5000})
    assert r.status_code == 400 and "512,000 characters; at most 64" in r.json()["detail"]
    assert bad.status_code == 400 and "letters, digits" in bad.text
    assert escaped.status_code == 400 and "5,000 characters" in escaped.text
    assert data.status_code == 400


def test_fresh_session_hashes_from_one_client_do_not_grow_state(app):
    """The threat: 2,000 joins with fresh client-chosen session hashes (+520 MB, held after the load). One address
    keeps at most SESSIONS_PER_CLIENT sessions; the oldest idle ones go, with what Gradio held for them."""
    address, n = "10.4.0.2", sessions_mod.SESSIONS_PER_CLIENT + 8
    with bounded(seconds=30):  # n joins and reads, each answered within the case budget
        for i in range(n):
            start = time.monotonic()
            assert join(app, f"fresh{i}", 1, ["x"], address).status_code == 200
            result(app, f"fresh{i}", address)
            assert time.monotonic() - start < 3, f"join {i} took {time.monotonic() - start:.1f} s; at most 3 s"
    holder = app.demo.state_holder.session_data
    mine = [f"fresh{i}" for i in range(n) if f"fresh{i}" in holder]
    assert len(mine) <= sessions_mod.SESSIONS_PER_CLIENT, len(mine)
    assert f"fresh{n - 1}" in holder and "fresh0" not in holder  # the newest kept, the oldest gone


def test_unread_results_are_capped_per_client(app):
    """The threat: joins whose results are never read, each kept in Gradio's queue. A client has at most
    IN_FLIGHT_PER_CLIENT events queued, running or unread; the next join is a 429 that says so."""
    address = "10.4.0.3"
    with bounded():
        codes = [join(app, f"unread{i}", 1, ["x"], address).status_code for i in range(IN_FLIGHT_PER_CLIENT + 3)]
        refused = join(app, "unread-last", 1, ["x"], address)
        other = join(app, "unread-other", 1, ["x"], "10.4.0.4")
    assert codes == [200] * IN_FLIGHT_PER_CLIENT + [429] * 3, codes
    assert f"at most {IN_FLIGHT_PER_CLIENT} at once" in refused.json()["detail"]
    assert other.status_code == 200
    result(app, "unread0", address)  # reading one result frees one place
    assert join(app, "unread-again", 1, ["x"], address).status_code == 200


# ------------------------------------------------------------------------ 5. fairness per client address


def test_requests_in_flight_are_counted_per_client_across_its_sessions(app):
    """The threat: one client with many sessions (or one session with 16 requests in flight) filling Gradio's
    worker threads. The cap counts a client's events over all its sessions; each of its sessions is one more."""
    address = "10.5.0.1"
    with bounded():
        codes = [join(app, f"many{i}", 2, ["x"], address).status_code for i in range(IN_FLIGHT_PER_CLIENT + 2)]
        one = [join(app, "one-session", 2, ["x"], "10.5.0.2").status_code for _ in range(IN_FLIGHT_PER_CLIENT + 2)]
    assert codes.count(200) == IN_FLIGHT_PER_CLIENT and codes[-1] == 429, codes
    assert one.count(200) == IN_FLIGHT_PER_CLIENT and one[-1] == 429, one


def test_joins_sent_at_once_do_not_pass_the_cap_together(app):
    """The threat: 16 sessions joining in the same instant, each counted before the others reached Gradio's queue
    (a load run saw 15 in flight under a cap of 8). Joins on their way into the queue count too."""
    from concurrent.futures import ThreadPoolExecutor

    n = 2 * IN_FLIGHT_PER_CLIENT
    with bounded(), ThreadPoolExecutor(n) as pool:
        codes = list(pool.map(lambda i: join(app, f"burst{i}", 2, ["x"], "10.5.0.9").status_code, range(n)))
    assert codes.count(200) <= IN_FLIGHT_PER_CLIENT and codes.count(429) >= n - IN_FLIGHT_PER_CLIENT, codes


def test_the_gate_keys_a_request_by_its_client_address(app, monkeypatch):
    """A handler past the gate is one client per address, whatever its session (``request_keys``)."""
    from mrtpo_viz.serving import fair_share
    from mrtpo_viz.serving.fair_share import FairGate

    gate, keys = FairGate(slots=4, long_s=60), []
    monkeypatch.setattr(fair_share, "GATE", gate)
    real_enter = gate.enter
    monkeypatch.setattr(
        gate, "enter", lambda session, client=None: keys.append((client, session)) or real_enter(session, client)
    )
    wrapped = fair_share.fair(lambda x: x)
    fn = next(f for f in app.demo.fns.values() if f.api_name == "echo")
    original, fn.fn = fn.fn, wrapped
    try:
        with bounded():
            for session, address in (("k1", "10.5.0.3"), ("k2", "10.5.0.3"), ("k3", "10.5.0.4")):
                assert join(app, session, 1, ["x"], address).status_code == 200
                result(app, session, address)
    finally:
        fn.fn = original
    assert keys == [("10.5.0.3", "k1"), ("10.5.0.3", "k2"), ("10.5.0.4", "k3")]
