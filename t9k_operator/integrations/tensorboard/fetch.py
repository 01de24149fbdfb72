"""The program of a TensorBoard pod's ``fetch`` container (``logDir.http``): it
keeps a copy of each URL's event file in a directory TensorBoard reads, and
follows the file as it grows.

Run as ``python3 -c <this file> <root> <interval> <url>...`` in the
TensorBoard's image (the builder passes its source: the image needs only
Python 3's standard library). Each URL's file is kept at
``<root>/<i>/<name>`` (``<i>``: its index, ``<name>``: the URL's last path
segment). Every ``<interval>`` seconds it asks for what lies past the copy's
end (``Range: bytes=<size>-``) and appends it: an event file only grows, and
TensorBoard, which keeps reading where it stopped, sees the new records. A
server that ignores the range sends the whole file, of which the part past
the copy's end is appended. A URL that cannot be read is told on stderr and
tried again next time.
"""

from __future__ import annotations

import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

TIMEOUT = 30.0


def local_name(url: str) -> str:
    """The copy's file name: the URL's last path segment."""
    segment = urllib.parse.unquote(urllib.parse.urlsplit(url).path.rsplit("/", 1)[-1])
    return segment if segment not in ("", ".", "..") else "events"


def fetch_once(url: str, path: str) -> int:
    """Append what ``url`` has past the end of ``path``; the bytes appended."""
    size = os.path.getsize(path) if os.path.exists(path) else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={size}-"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            body = response.read()
            if response.status == 200:  # the range was ignored: the whole file
                body = body[size:]
    except urllib.error.HTTPError as exc:
        if exc.code == 416:  # nothing past the end
            return 0
        raise
    if body:
        with open(path, "ab") as out:
            out.write(body)
    return len(body)


def main(argv: list[str]) -> None:
    root, interval, urls = argv[0], float(argv[1]), argv[2:]
    paths = []
    for i, url in enumerate(urls):
        os.makedirs(os.path.join(root, str(i)), exist_ok=True)
        paths.append(os.path.join(root, str(i), local_name(url)))
    while True:
        for url, path in zip(urls, paths, strict=True):
            try:
                fetch_once(url, path)
            except (OSError, ValueError) as exc:
                print(f"fetch {url}: {exc}", file=sys.stderr, flush=True)
        time.sleep(interval)


if __name__ == "__main__":
    main(sys.argv[1:])
