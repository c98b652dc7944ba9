"""`harness serve`: the store over HTTP, with a fresh index at /.

Standard library only (ThreadingHTTPServer); it binds to the host it is given
(loopback by default) and serves files under the store and nothing else.
Ctrl-C stops it cleanly.
"""

from __future__ import annotations

import sys
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

from harness.core.errors import BadInput, HarnessError
from reports.index import write_index

INDEX_PATHS = ("/", "/index.html")


class StoreHandler(SimpleHTTPRequestHandler):
    """Static files of the store; the index is regenerated before it is sent."""

    def _refresh_index(self) -> None:
        if urlsplit(self.path).path in INDEX_PATHS:
            try:
                write_index(Path(self.directory))
            except (OSError, HarnessError) as err:
                self.log_error("index not regenerated: %s", err)

    def do_GET(self) -> None:
        self._refresh_index()
        super().do_GET()

    def do_HEAD(self) -> None:
        self._refresh_index()
        super().do_HEAD()

    def translate_path(self, path: str) -> str:
        """Only what resolves inside the store: a symlink out of it (to /etc, say)
        is answered 404, as if it were not there; store/latest resolves inside."""
        local = super().translate_path(path)
        root = Path(self.directory).resolve()
        if not Path(local).resolve().is_relative_to(root):
            return str(root / ".outside-the-store")  # never exists: a 404
        return local

    def end_headers(self) -> None:
        # Reports change when a run is re-checked; never show a stale one.
        self.send_header("Cache-Control", "no-store")
        super().end_headers()


def make_server(store: Path, host: str, port: int) -> ThreadingHTTPServer:
    """A bound server for the store (port 0 picks a free one); errors are for a person."""
    if store.exists() and not store.is_dir():
        raise BadInput(f"store {store} is a file, not a folder of runs (pass --store)")
    if not store.is_dir():
        raise BadInput(f"store {store} does not exist (run `harness run` first, or pass --store)")
    handler = partial(StoreHandler, directory=str(store.resolve()))
    try:
        return ThreadingHTTPServer((host, port), handler)
    except OSError as err:
        raise HarnessError(f"cannot listen on {host}:{port}: {err.strerror or err}") from err


def serve(store: Path, host: str, port: int) -> None:
    """Serve the store until Ctrl-C."""
    server = make_server(store, host, port)
    write_index(store)
    bound_host, bound_port = server.server_address[:2]
    print(f"serving {store.resolve()} at http://{bound_host}:{bound_port}/ (Ctrl-C stops)",
          flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
    finally:
        server.server_close()
