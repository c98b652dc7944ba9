"""`harness serve`: the store over HTTP, with a fresh index at /.

Standard library only (ThreadingHTTPServer). It binds to loopback unless given
an explicit address (--host 0.0.0.0, --host 192.168.1.5: then one warning line
says the reports are open to the network); '' or '0', which the socket layer
takes for "every interface", are refused. A request whose Host header names
anything but the bound address or loopback is answered 421, so a web page that
re-binds its own DNS name to 127.0.0.1 cannot read the reports. It serves only
what the harness wrote in the store, and writes nothing: / (and /index.html) is
the index rendered from memory (a user's own store/index.html is neither
overwritten nor served); a run's report.html when it is the harness's (its
marker); a soak's index.html and the run logs it links to (runs/NNNN.log), in a
folder holding soak.json. Anything else is a 404, as if it were not there: a
dotfile, a folder's listing, a user's file, test.json, a symlink out of the
store. A request that fails is one line on stderr, never a traceback. Ctrl-C
stops it cleanly.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import sys
from functools import partial
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

from elr_harness.core.errors import BadInput, HarnessError
from elr_harness.core.files import MISSING, path_problem
from elr_harness.core.validate import printable
from elr_harness.report.atomic import is_our_report
from elr_harness.report.index import INDEX_NAME, render_index

#: A run's report (report/build.py writes it) and a soak's record (soak/runner.py):
#: the names serve looks for, spelt here so that serve loads neither.
REPORT_NAME = "report.html"
SOAK_FILE = "soak.json"

INDEX_PATHS = ("/", "/" + INDEX_NAME)
#: Names every browser on this machine may use for a loopback-bound server.
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


def bind_address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """--host as an address: an IP written in full, or localhost (127.0.0.1).

    Shorthand is refused rather than guessed: the socket layer binds '' and '0'
    to every interface, and reads '127.1' as 127.0.0.1.
    """
    if host == "localhost":
        return ipaddress.IPv4Address("127.0.0.1")
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        raise BadInput(f"--host {host!r} is not an IP address: give one in full, such as "
                       "127.0.0.1 (this machine only), 0.0.0.0 (every interface) or "
                       "192.168.1.5, or localhost") from None


def _literal(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    return f"[{ip}]" if ip.version == 6 else str(ip)


def host_allowed(header: str | None, ip: ipaddress.IPv4Address | ipaddress.IPv6Address,
                 port: int) -> bool:
    """Whether a request's Host header names this server: loopback or the bound
    address, with the port (or without it on port 80). Bound to every interface,
    any IP literal is accepted too: a DNS-rebinding page always sends a name."""
    if not header:
        return False
    header = header.strip().lower()
    name, colon, given_port = header.rpartition(":")
    if not colon or name.endswith(":") or (not name.startswith("[") and ":" in name):
        name, given_port = header, ""  # no port (an IPv6 literal without one is bracketed)
    if given_port != str(port) and not (given_port == "" and port == 80):
        return False
    if name in LOOPBACK_NAMES or name == _literal(ip):
        return True
    if ip.is_unspecified:
        literal = name[1:-1] if name.startswith("[") and name.endswith("]") else name
        try:
            ipaddress.ip_address(literal)
        except ValueError:
            return False
        return (":" in literal) == name.startswith("[")
    return False


class StoreHandler(SimpleHTTPRequestHandler):
    """Static files of the store; / is the index, rendered from memory."""

    def _misdirected(self) -> bool:
        """Answer 421 to a Host this server is not (True when it did)."""
        server = self.server
        if host_allowed(self.headers.get("Host"), server.ip, server.server_address[1]):
            return False
        self.send_error(HTTPStatus.MISDIRECTED_REQUEST,
                        "this server answers only to its own address or localhost")
        return True

    def _index(self) -> bool:
        """Send the index from memory for / and /index.html (never a user's own
        index.html); True when it did."""
        path = urlsplit(self.path).path
        store = Path(self.directory)
        if path not in INDEX_PATHS:
            return False
        body = render_index(store).encode("utf-8", "replace")
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        return True

    def do_GET(self) -> None:
        if not self._misdirected() and not self._index():
            super().do_GET()

    def do_HEAD(self) -> None:
        if not self._misdirected() and not self._index():
            super().do_HEAD()

    def translate_path(self, path: str) -> str:
        """Only what the harness wrote (served_by_us), resolving inside the store:
        a symlink out of it (to /etc, say) is answered 404, as if it were not there;
        store/latest resolves inside. A path the file system cannot hold (a NUL
        byte) is a 404 too."""
        local = super().translate_path(path)
        root = Path(self.directory).resolve()
        try:
            inside = Path(local).resolve().is_relative_to(root) and served_by_us(
                Path(self.directory), Path(local))
        except (OSError, ValueError):
            inside = False
        if not inside:
            return str(root / ".not-served")  # never exists: a 404
        return local

    def end_headers(self) -> None:
        # Reports change when a run is re-checked; never show a stale one.
        self.send_header("Cache-Control", "no-store")
        super().end_headers()


#: A soak's run log, as its index links to it (soak/<time>/runs/NNNN.log).
_RUN_LOG = re.compile(r"[0-9]{4,}\.log")


def served_by_us(store: Path, local: Path) -> bool:
    """Whether a file under the store is one the harness wrote there and serves:
    a run's report.html that carries the report's marker; a soak's index.html or
    runs/NNNN.log, in a folder holding soak.json. Never a dotfile or a file in a
    dot-folder, never a folder (its listing)."""
    try:
        parts = local.relative_to(store).parts
    except ValueError:
        return False
    if not parts or any(part.startswith(".") for part in parts) or not local.is_file():
        return False
    name = parts[-1]
    if name == REPORT_NAME:
        return is_our_report(local)
    if name == INDEX_NAME and len(parts) > 1:
        return (local.parent / SOAK_FILE).is_file()
    if _RUN_LOG.fullmatch(name) and len(parts) > 2 and parts[-2] == "runs":
        return (local.parent.parent / SOAK_FILE).is_file()
    return False


class StoreServer(ThreadingHTTPServer):
    """The HTTP server of one store, on the bound address's family."""

    daemon_threads = True

    def __init__(self, ip: ipaddress.IPv4Address | ipaddress.IPv6Address, port: int,
                 handler) -> None:
        self.ip = ip
        self.address_family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
        super().__init__((str(ip), port), handler)

    def handle_error(self, request, client_address) -> None:
        """A request that failed is one line on stderr (the default prints a traceback)."""
        err = sys.exc_info()[1]
        print(f"harness serve: a request from {client_address[0]} failed: "
              f"{type(err).__name__}: {err}", file=sys.stderr, flush=True)


def make_server(store: Path, host: str, port: int) -> StoreServer:
    """A bound server for the store (port 0 picks a free one); errors are for a person."""
    ip = bind_address(host)
    problem = path_problem(store)
    if problem == MISSING:
        raise BadInput(f"store {printable(store)} does not exist (run `harness run` first, "
                       "or pass --store)")
    if problem is not None:
        raise BadInput(f"store {printable(store)}: {problem}")
    if not store.is_dir():
        raise BadInput(f"store {printable(store)} is a file, not a folder of runs (pass --store)")
    handler = partial(StoreHandler, directory=str(store.resolve()))
    try:
        return StoreServer(ip, port, handler)
    except OSError as err:
        raise HarnessError(f"cannot listen on {host}:{port}: {err.strerror or err}") from err


def serve(store: Path, host: str, port: int) -> None:
    """Serve the store until Ctrl-C."""
    server = make_server(store, host, port)
    bound = f"{_literal(server.ip)}:{server.server_address[1]}"
    if not server.ip.is_loopback:
        print(f"harness: warning: serving on {bound} reaches beyond this machine: anyone "
              "who can connect to it can read the reports", file=sys.stderr, flush=True)
    print(f"serving {store.resolve()} at http://{bound}/ (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
    finally:
        server.server_close()
