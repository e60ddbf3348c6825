"""Upload aliases and the per-client upload share (mrtpo_viz.serving.uploads), without a server."""

import json
import os

from mrtpo_viz.serving.uploads import ALIAS, UploadShare, alias, alias_answer, resolve, resolve_inputs

FOLDER = os.path.join(os.sep, "srv", "cache")


def test_an_alias_names_the_file_inside_the_folder_and_resolves_back():
    path = os.path.join(FOLDER, "ab12", "run.zip")
    name = alias(path, FOLDER)
    assert name == ALIAS + "ab12/run.zip" and "srv" not in name
    assert resolve(name, FOLDER) == path
    assert alias("/elsewhere/x", FOLDER) == "/elsewhere/x"  # not an upload: left alone


def test_an_alias_that_would_leave_the_folder_is_not_resolved():
    for name in (ALIAS + "../etc/passwd", ALIAS + "a//b", ALIAS + "./x", ALIAS):
        assert resolve(name, FOLDER) == name


def test_inputs_are_resolved_only_in_path_fields():
    body = json.dumps(
        {"data": [{"path": ALIAS + "h/f.zip", "url": "u"}, ALIAS + "h/f.zip", {"text": ALIAS + "x"}]}
    ).encode()
    data = json.loads(resolve_inputs(body, FOLDER))
    assert data["data"][0]["path"] == os.path.join(FOLDER, "h", "f.zip")
    assert data["data"][1] == ALIAS + "h/f.zip" and data["data"][2]["text"] == ALIAS + "x"  # typed text stays
    assert resolve_inputs(b"not json " + ALIAS.encode(), FOLDER) == b"not json " + ALIAS.encode()


def test_the_answer_of_the_upload_route_is_aliased():
    answer = json.dumps([os.path.join(FOLDER, "h", "a.zip")]).encode()
    assert json.loads(alias_answer(answer, FOLDER)) == [ALIAS + "h/a.zip"]
    assert alias_answer(b'{"detail": "x"}', FOLDER) is None


def test_the_share_counts_bytes_per_client_over_its_window():
    share = UploadShare(share_bytes=100, window_s=60)
    share.record("c", 70, now=0)
    assert share.left("c", now=10) == 30 and share.left("other", now=10) == 100
    share.record("c", 30, now=20)
    assert share.left("c", now=30) == 0
    assert share.left("c", now=61) == 70  # the first upload left the window
    assert share.left("c", now=81) == 100
