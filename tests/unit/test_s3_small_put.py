"""The lean PUT of small upload bodies (small_put.py): on the wire it is botocore's PutObject, and anything
but a 2xx goes back to botocore's put_object."""

from __future__ import annotations

import http.server
import os
import re
import threading

import pytest

from inference_platform.weights.s3.client import EXPECT_CONTINUE_BYTES, client, content_md5
from inference_platform.weights.s3.small_put import SmallPut

KEY = "model a/1/ü+x~y=(z).bin"
# Headers botocore adds for its own telemetry and retry bookkeeping; none is signed.
BOTOCORE_ONLY = {"user-agent", "amz-sdk-invocation-id", "amz-sdk-request", "accept-encoding"}


class Recorder(http.server.ThreadingHTTPServer):
    """A loopback HTTP server recording each PUT, answering with `statuses` in turn, then 200."""

    def __init__(self, statuses: list[int]):
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self.statuses = list(statuses)
        super().__init__(("127.0.0.1", 0), _Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def props(self) -> dict:
        return {"endpoint": f"http://127.0.0.1:{self.server_port}", "region": "eu-west-1",
                "accessKeyId": "AKIAONE", "secretAccessKey": "one"}


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Recorder

    def do_PUT(self):  # noqa: N802 - the handler's name for PUT
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        status = self.server.statuses.pop(0) if self.server.statuses else 200
        reply = b"" if status == 200 else b"<Error><Code>SlowDown</Code><Message>Reduce your request rate.</Message></Error>"
        self.send_response(status)
        self.send_header("ETag", f'"{content_md5(body)}"')
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *_):
        pass


@pytest.fixture
def recorder():
    servers = []

    def start(statuses=()):
        servers.append(Recorder(list(statuses)))
        return servers[-1]
    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _put(put, size: int) -> dict:
    body = os.urandom(size)
    return put(Bucket="ours-b", Key=KEY, Body=body, Metadata={"sha256": "ab" * 32}, ContentMD5=content_md5(body))


def _signed(headers: dict[str, str]) -> str:
    return re.search(r"SignedHeaders=([^,]+)", headers["authorization"]).group(1)


def test_a_small_object_goes_on_the_wire_as_botocores_put_object_sends_it(recorder):
    server = recorder()
    s3 = client(server.props)
    _put(s3.put_object, 64 * 1024)
    _put(SmallPut(s3, server.props), 64 * 1024)
    (path, botocore_sent, _), (lean_path, lean_sent, lean_body) = server.requests
    assert lean_path == path == "/ours-b/model%20a/1/%C3%BC%2Bx~y%3D%28z%29.bin"
    assert "amz-sdk-invocation-id" in botocore_sent and "amz-sdk-invocation-id" not in lean_sent  # it took the lean path
    assert set(lean_sent) - BOTOCORE_ONLY == set(botocore_sent) - BOTOCORE_ONLY
    assert _signed(lean_sent) == _signed(botocore_sent) == "content-md5;host;x-amz-content-sha256;x-amz-date;x-amz-meta-sha256"
    assert lean_sent["x-amz-content-sha256"] == botocore_sent["x-amz-content-sha256"] == "UNSIGNED-PAYLOAD"
    assert lean_sent["x-amz-meta-sha256"] == "ab" * 32 and len(lean_body) == int(lean_sent["content-length"]) == 64 * 1024
    assert "Credential=AKIAONE/" in lean_sent["authorization"] and "/eu-west-1/s3/aws4_request" in lean_sent["authorization"]


def test_a_refused_small_put_is_sent_again_by_botocore_with_its_retries(recorder):
    server = recorder([503, 500])  # the lean PUT, then botocore's first attempt; its retry is answered
    s3 = client(server.props)
    response = _put(SmallPut(s3, server.props), 1024)
    assert response["ResponseMetadata"]["RetryAttempts"] == 1
    sent = [headers for _, headers, _ in server.requests]
    assert ["amz-sdk-request" in headers for headers in sent] == [False, True, True]
    assert response["ETag"] == f'"{content_md5(server.requests[-1][2])}"'


def test_bodies_that_wait_for_100_continue_go_through_botocore_alone(recorder):
    server = recorder()
    s3 = client(server.props)
    _put(SmallPut(s3, server.props), EXPECT_CONTINUE_BYTES)
    ((_, sent, body),) = server.requests
    assert "amz-sdk-invocation-id" in sent and len(body) == EXPECT_CONTINUE_BYTES
