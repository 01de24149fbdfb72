"""The fetch container's program (logDir.http), against a real HTTP server of
this process: it copies each URL's file, appends what the file grew by (with
a Range request, or from the whole file when the server ignores ranges),
and tells a URL it cannot read without stopping."""

from __future__ import annotations

import http.server
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from t9k_operator.integrations.tensorboard import fetch


class RangeHandler(http.server.SimpleHTTPRequestHandler):
    """Serves files, honouring ``Range: bytes=<n>-`` as HTTP servers of files do."""

    def do_GET(self) -> None:
        asked = self.headers.get("Range")
        path = Path(self.translate_path(self.path))
        if not asked or not path.is_file():
            super().do_GET()
            return
        start = int(re.fullmatch(r"bytes=(\d+)-", asked)[1])  # type: ignore[index]
        data = path.read_bytes()
        if start >= len(data):
            self.send_error(416)
            return
        self.send_response(206)
        self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.send_header("Content-Length", str(len(data) - start))
        self.end_headers()
        self.wfile.write(data[start:])

    def log_message(self, *args: object) -> None:
        pass


class PlainHandler(http.server.SimpleHTTPRequestHandler):
    """Python's file server, which ignores Range."""

    def log_message(self, *args: object) -> None:
        pass


def serve(root: Path, handler: type[http.server.SimpleHTTPRequestHandler]) -> Iterator[str]:
    class Bound(handler):  # type: ignore[valid-type, misc]
        def __init__(self, *args: object, **kw: object) -> None:
            super().__init__(*args, directory=str(root), **kw)  # type: ignore[arg-type]

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Bound)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


@pytest.fixture(params=[RangeHandler, PlainHandler], ids=["range", "no-range"])
def site(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, str]]:
    root = tmp_path / "site"
    root.mkdir()
    yield from ((root, url) for url in serve(root, request.param))


def test_a_file_is_copied_then_followed_as_it_grows(site: tuple[Path, str], tmp_path: Path) -> None:
    root, base = site
    (root / "run").mkdir()
    (root / "run" / "events.out.tfevents.1").write_bytes(b"first record;")
    copy = tmp_path / "copy" / "events"
    copy.parent.mkdir()
    url = f"{base}/run/events.out.tfevents.1"
    assert fetch.fetch_once(url, str(copy)) == len(b"first record;")
    assert fetch.fetch_once(url, str(copy)) == 0
    with open(root / "run" / "events.out.tfevents.1", "ab") as grown:
        grown.write(b"second;")
    assert fetch.fetch_once(url, str(copy)) == len(b"second;")
    assert copy.read_bytes() == b"first record;second;"


def test_the_program_keeps_each_urls_copy_in_its_own_directory(
    site: tuple[Path, str], tmp_path: Path
) -> None:
    root, base = site
    (root / "a").mkdir()
    (root / "a" / "ev").write_bytes(b"A")
    (root / "b%20c").write_bytes(b"B")
    out = tmp_path / "out"
    urls = [f"{base}/a/ev", f"{base}/b%2520c", f"{base}/missing"]
    program = Path(fetch.__file__).read_text()
    proc = subprocess.Popen(
        [sys.executable, "-c", program, str(out), "0.2", *urls],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if (out / "0" / "ev").exists() and (out / "1" / "b%20c").exists():
                break
            time.sleep(0.1)
        (root / "a" / "ev").write_bytes(b"AA")
        while time.monotonic() < deadline and (out / "0" / "ev").read_bytes() != b"AA":
            time.sleep(0.1)
        assert (out / "0" / "ev").read_bytes() == b"AA"
        assert (out / "1" / "b%20c").read_bytes() == b"B"
        assert proc.poll() is None, "a URL it cannot read does not stop it"
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert f"fetch {base}/missing: HTTP Error 404" in err


def test_a_copy_is_named_after_the_urls_last_segment() -> None:
    assert fetch.local_name("http://h/run/events.out.tfevents.1?x=1") == "events.out.tfevents.1"
    assert fetch.local_name("http://h/run/") == "events"
    assert fetch.local_name("http://h/a/..") == "events"
