"""What a pod's port 6006 answers on the local cluster's KWOK nodes
(hack/third_party/kwok/portforward.yaml): one HTTP response to one request on stdin and
stdout, as a port-forward to a real TensorBoard's pod would return its page."""

import sys

request = b""
while b"\r\n\r\n" not in request:
    chunk = sys.stdin.buffer.read1(65536)
    if not chunk:
        break
    request += chunk
path = request.split(b" ", 2)[1].decode() if request.count(b" ") >= 2 else "/"
body = f"<html><title>TensorBoard</title><body>TensorBoard stand-in: {path}</body></html>\n"
data = body.encode()
sys.stdout.buffer.write(
    b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n"
    + f"Content-Length: {len(data)}\r\n\r\n".encode()
    + data
)
sys.stdout.buffer.flush()
