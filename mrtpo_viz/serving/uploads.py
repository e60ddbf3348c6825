"""Gradio's upload route: a cap per request and a share per client address, and answers without server paths.

Gradio's own ``max_file_size`` caps each file of an upload and nothing else: 60 files of 4.5 MiB in one request
were stored (270 MiB, kept in Gradio's cache for an hour), and a 300 MiB plain form field was read into memory.
Here (the guard, :mod:`.guard`, applies it):

- one upload request carries at most the upload cap (``MRTPO_MAX_UPLOAD_MB``) in all, files and form fields,
  plus :data:`FORM_SLACK` for the form's own headers, counted as the body streams in; past it the request is
  refused (413) and the files Gradio had begun to write are deleted (:func:`.gradio_queue.upload_error`);
- one client address stores at most :data:`CLIENT_SHARE` uploads at the cap within the time Gradio keeps them
  (an hour): the bytes it stored are counted, and a request is capped at what is left of its share;
- the answer names each stored file by an alias (``gradio-upload/<hash>/<name>``), never by its place on the
  server; the guard turns an alias back into the file's path where a request names it (an input's ``path``, the
  ``/gradio_api/file=`` route), and nowhere else.
"""

from __future__ import annotations

import json
import os
from collections import OrderedDict, deque

FORM_SLACK = 64 * 2**10
"""Bytes an upload request may carry beyond its files' cap: the multipart boundaries and part headers."""
CLIENT_SHARE = 8
"""Uploads at the cap that one client address may store within the window (40 MiB an hour by default)."""
MAX_CLIENTS = 10_000
"""Client addresses whose uploads are remembered at most (the oldest are forgotten first)."""
ALIAS = "gradio-upload/"
"""How an upload's answer names a stored file: this, then the file's path inside Gradio's upload folder."""


class UploadShare:
    """Bytes stored per client address over the last ``window_s`` seconds."""

    def __init__(self, share_bytes: int, window_s: float):
        self.share_bytes, self.window_s = share_bytes, window_s
        self._stored: OrderedDict[str, deque] = OrderedDict()

    def used(self, client: str, now: float) -> int:
        stored = self._stored.get(client)
        if stored is None:
            return 0
        while stored and now - stored[0][0] >= self.window_s:
            stored.popleft()
        if not stored:
            del self._stored[client]
            return 0
        return sum(n for _, n in stored)

    def left(self, client: str, now: float) -> int:
        return max(self.share_bytes - self.used(client, now), 0)

    def record(self, client: str, n: int, now: float) -> None:
        self._stored.setdefault(client, deque()).append((now, n))
        self._stored.move_to_end(client)
        while len(self._stored) > MAX_CLIENTS:
            self._stored.popitem(last=False)


def over_message(cap: int, share_left: int, share: int) -> str:
    mib = lambda n: f"{n / 2**20:.1f} MiB"  # noqa: E731
    if share_left < cap:
        return (
            f"This upload is over what is left of this address's upload share: {mib(share_left)} of {mib(share)} "
            f"an hour (files and form fields, counted as they arrive); nothing of it was kept. Try again later."
        )
    return (
        f"This upload is over {mib(cap)} in all (files and form fields, counted as they arrive; "
        "MRTPO_MAX_UPLOAD_MB); nothing of it was kept."
    )


def alias(path: str, folder: str) -> str:
    """``<folder>/<hash>/<name>`` -> ``gradio-upload/<hash>/<name>``; any other path as it is."""
    root = os.path.join(folder, "")
    return ALIAS + path[len(root) :].replace(os.sep, "/") if path.startswith(root) else path


def resolve(name: str, folder: str) -> str:
    """An alias back to the stored file's path; anything else (or an alias that would leave the folder) as it is."""
    if not name.startswith(ALIAS):
        return name
    parts = name[len(ALIAS) :].split("/")
    if any(p in ("", ".", "..") for p in parts):
        return name
    return os.path.join(folder, *parts)


def alias_answer(body: bytes, folder: str) -> bytes | None:
    """The upload route's answer (a JSON list of stored paths) with aliases; None if it is not such a list."""
    try:
        paths = json.loads(body)
    except ValueError:
        return None
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        return None
    return json.dumps([alias(p, folder) for p in paths]).encode()


def resolve_inputs(body: bytes, folder: str) -> bytes:
    """A JSON request body whose file inputs (``{"path": "gradio-upload/..."}``) name their stored files again."""
    if ALIAS.encode() not in body:
        return body
    try:
        data = json.loads(body)
    except ValueError:
        return body

    def walk(x):
        if isinstance(x, dict):
            return {k: resolve(v, folder) if k == "path" and isinstance(v, str) else walk(v) for k, v in x.items()}
        if isinstance(x, list):
            return [walk(v) for v in x]
        return x

    return json.dumps(walk(data)).encode()
