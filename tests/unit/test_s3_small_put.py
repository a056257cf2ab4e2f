"""The lean PUT of small upload bodies (small_put.py): on the wire it is botocore's PutObject, and anything
but a 2xx goes back to botocore's put_object."""

from __future__ import annotations

import datetime
import http.server
import os
import re
import ssl
import threading

import pytest

from inference_platform.weights.s3.client import EXPECT_CONTINUE_BYTES, client, content_md5
from inference_platform.weights.s3.small_put import SmallPut

KEY = "model a/1/ü+x~y=(z).bin"
# Headers botocore adds for its own telemetry and retry bookkeeping; none is signed.
BOTOCORE_ONLY = {"user-agent", "amz-sdk-invocation-id", "amz-sdk-request", "accept-encoding"}


class Recorder(http.server.ThreadingHTTPServer):
    """A loopback HTTP server recording each PUT, answering with `statuses` in turn, then 200."""

    def __init__(self, statuses: list[int | bytes], tls: ssl.SSLContext | None = None):
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self.statuses = list(statuses)
        super().__init__(("127.0.0.1", 0), _Handler)
        self.scheme = "http"
        if tls is not None:
            self.socket, self.scheme = tls.wrap_socket(self.socket, server_side=True), "https"
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def props(self) -> dict:
        return {"endpoint": f"{self.scheme}://127.0.0.1:{self.server_port}", "region": "eu-west-1",
                "accessKeyId": "AKIAONE", "secretAccessKey": "one"}


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Recorder

    def do_PUT(self):  # noqa: N802 - the handler's name for PUT
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        status = self.server.statuses.pop(0) if self.server.statuses else 200
        if isinstance(status, bytes):  # a raw answer, then the connection ends
            self.wfile.write(status)
            self.close_connection = True
            return
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

    def start(statuses=(), tls=None):
        servers.append(Recorder(list(statuses), tls))
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


def test_an_answer_the_lean_put_does_not_read_sends_the_object_again_through_botocore(recorder):
    server = recorder([b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"])
    s3 = client(server.props)
    response = _put(SmallPut(s3, server.props), 1024)
    assert ["amz-sdk-invocation-id" in headers for _, headers, _ in server.requests] == [False, True]
    assert response["ETag"] == f'"{content_md5(server.requests[-1][2])}"'


# --------------------------------------------------------------------------- https and proxies


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """A CA's bundle, and a server context per name its certificate is for: 127.0.0.1 and another host."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    root = tmp_path_factory.mktemp("pki")
    pem = serialization.Encoding.PEM
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(x509.NameOID.COMMON_NAME, "test CA")])
    now = datetime.datetime.now(datetime.timezone.utc)
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
          .not_valid_after(now + datetime.timedelta(hours=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(ca_key, hashes.SHA256()))
    (root / "ca.pem").write_bytes(ca.public_bytes(pem))
    contexts = {}
    for name, san in {"127.0.0.1": x509.IPAddress(ipaddress.ip_address("127.0.0.1")), "other": x509.DNSName("other.example")}.items():
        key = ec.generate_private_key(ec.SECP256R1())
        leaf = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(x509.NameOID.COMMON_NAME, name)]))
                .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(hours=1))
                .add_extension(x509.SubjectAlternativeName([san]), critical=False).sign(ca_key, hashes.SHA256()))
        (root / f"{name}.pem").write_bytes(leaf.public_bytes(pem) + key.private_bytes(
            pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        contexts[name] = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        contexts[name].load_cert_chain(root / f"{name}.pem")
    return root / "ca.pem", contexts


def test_over_https_the_lean_put_verifies_the_server_against_botocores_bundle(recorder, pki, monkeypatch):
    bundle, contexts = pki
    monkeypatch.setenv("AWS_CA_BUNDLE", str(bundle))
    server = recorder(tls=contexts["127.0.0.1"])
    _put(SmallPut(client(server.props), server.props), 1024)
    ((_, sent, _),) = server.requests
    assert "amz-sdk-invocation-id" not in sent and sent["host"] == f"127.0.0.1:{server.server_port}"


@pytest.mark.parametrize("case", ["certificate-for-another-host", "no-bundle-trusts-the-ca"])
def test_over_https_an_unverified_server_gets_no_request(recorder, pki, monkeypatch, case):
    from botocore.exceptions import SSLError

    bundle, contexts = pki
    if case == "certificate-for-another-host":
        monkeypatch.setenv("AWS_CA_BUNDLE", str(bundle))
    server = recorder(tls=contexts["other" if case == "certificate-for-another-host" else "127.0.0.1"])
    put = SmallPut(client(server.props), server.props)
    assert put._connections is not None  # the lean path was tried, and refused the server as botocore does
    with pytest.raises(SSLError):
        _put(put, 1024)
    assert server.requests == []


def test_an_endpoint_behind_a_proxy_is_sent_to_by_botocore_alone(recorder, monkeypatch):
    server = recorder()
    for name in ("NO_PROXY", "no_proxy", "HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")  # for https endpoints only, as botocore reads it
    monkeypatch.setenv("NO_PROXY", "s3.internal")
    assert SmallPut(client(server.props), server.props)._connections is not None
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    assert SmallPut(client(server.props), server.props)._connections is None
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")  # botocore bypasses the proxy: so may the lean path
    assert SmallPut(client(server.props), server.props)._connections is not None


def test_a_client_configured_with_a_proxy_sends_through_botocore_alone(recorder):
    import botocore.session
    from botocore.config import Config

    server = recorder()
    s3 = botocore.session.get_session().create_client(
        "s3", endpoint_url=server.props["endpoint"], aws_access_key_id="AKIAONE", aws_secret_access_key="one",
        config=Config(region_name="eu-west-1", proxies={"http": "http://127.0.0.1:9"}))
    assert SmallPut(s3, server.props)._connections is None
