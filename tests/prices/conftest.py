"""Fixtures shared by the price tests: a local HTTP server for recorded catalog files (no test reaches
the network)."""
import functools
import http.server
import threading

import pytest

from price_helpers import QuietHandler


@pytest.fixture
def server():
    """A quiet HTTP server on 127.0.0.1 serving a folder (404 for what it lacks, as the upstream does)."""
    started = []

    def serve(folder):
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(folder)))
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        started.append(httpd)
        return f"http://127.0.0.1:{httpd.server_address[1]}"
    yield serve
    for h in started:
        h.shutdown()
