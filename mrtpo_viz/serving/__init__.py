"""Serving many clients from one process: the server's concern, in one room.

- :mod:`.guard`: the app's ASGI middleware, before Gradio reads a request: framing, a body cap by route
  (:mod:`.body_limit`), the upload route's caps and path aliases (:mod:`.uploads`), bounded sessions
  (:mod:`.sessions`), requests in flight per client address; Gradio's queue and session store are read and
  trimmed through :mod:`.gradio_queue` only;
- :mod:`.fair_share`: who starts next among the requests that do real work (per client address, then session);
- :mod:`.turns`: fair turns at the one model, forward by forward, and where abandoned work stops
  (:func:`.gradio_context.client_gone` says whether a request's client left);
- :mod:`.memory`: the allocator settings of a long-lived server (mmap threshold, arenas, periodic trim).

Nothing here imports the rest of the package (``policy`` and ``relevance`` import :mod:`.turns` and
:mod:`.memory`), and nothing imports Gradio at import time.
"""
