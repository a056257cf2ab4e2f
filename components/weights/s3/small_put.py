"""PutObject of a small upload body without botocore's per-request path, on the happy path only.

A 64 KiB PUT through `put_object` costs about 0.7 ms of CPU, most of it botocore building,
serializing, routing (endpoint rules), hooking, signing and parsing one request, then urllib3 and
http.client sending it and parsing the answer; with many small files that CPU, on one
interpreter, bounds the upload. `SmallPut` builds the same request itself (path-style URL,
Content-MD5, the `x-amz-meta-*` headers, `UNSIGNED-PAYLOAD` as the client does: client.py), signs
it as botocore's `S3SigV4Auth` does (sigv4.py) and sends it on a kept-alive connection of its own (wire.py),
with the client's timeouts and, over https, the CA bundle botocore would verify against: about
0.2 ms. Only a 2xx answer is taken; anything else (an error status, a reset connection, a
timeout, an answer wire.py does not read) sends the object again with `put_object`, so error
parsing, the retry decisions and backoff and every error message stay botocore's: a fault costs
one more attempt, never a different outcome. An endpoint reached through a proxy, or a client
with a client certificate, sends every object with `put_object`.
"""

from __future__ import annotations

import ssl
from typing import Any, Optional
from urllib.parse import quote, urlsplit

from inference_platform.weights.s3.client import CREDENTIAL_KEYS, EXPECT_CONTINUE_BYTES, plain, tls_verify
from inference_platform.weights.s3.sigv4 import UnsignedPayloadSigner
from inference_platform.weights.s3.wire import Connections, host_header

USER_AGENT = "inference-platform"


def _tls_context() -> ssl.SSLContext:
    """Certificate and host name verified, against the bundle botocore would use (httpsession.py get_cert_path)."""
    from botocore.httpsession import get_cert_path

    return ssl.create_default_context(cafile=get_cert_path(tls_verify()))


def _direct_connections(s3) -> Optional[Connections]:
    """Connections of our own to the client's endpoint, or None where botocore's HTTP session must send:
    a proxy for the endpoint (botocore endpoint.py _get_proxies: the environment's, or the client's
    `proxies`), a client certificate, or a bundle that does not load (botocore then says why)."""
    from botocore.utils import get_environ_proxies

    endpoint, config = s3.meta.endpoint_url, s3.meta.config
    scheme = urlsplit(endpoint).scheme
    # As httpsession.py ProxyConfiguration.proxy_url_for picks one: by the endpoint's scheme.
    proxy = (config.proxies or {}).get(scheme) or get_environ_proxies(endpoint).get(scheme)
    if scheme not in ("http", "https") or proxy or config.client_cert:
        return None
    try:
        tls = _tls_context() if scheme == "https" else None
    except (OSError, ssl.SSLError):
        return None
    return Connections(endpoint, tls, config.connect_timeout, config.read_timeout)


class SmallPut:
    """`put_object(Bucket, Key, Body, Metadata, ContentMD5)` of a client made by `client()`, lean below
    `EXPECT_CONTINUE_BYTES` (larger bodies wait for 100 Continue, which only botocore's path does).
    `close()` closes its connections once the threads that sent are done."""

    def __init__(self, s3, props: dict[str, Any]):
        self._s3 = s3
        # The keys `client()` gave the client, from the same resource properties.
        self._signer = UnsignedPayloadSigner(*(plain(props[k]) for k in CREDENTIAL_KEYS), s3.meta.region_name)
        self._endpoint = s3.meta.endpoint_url.rstrip("/")
        self._host = host_header(self._endpoint)
        self._connections = _direct_connections(s3)

    def __call__(self, *, Bucket: str, Key: str, Body: bytes, Metadata: dict[str, str], ContentMD5: str) -> dict[str, Any]:
        if self._connections is not None and len(Body) < EXPECT_CONTINUE_BYTES:
            etag = self._send(Bucket, Key, Body, Metadata, ContentMD5)
            if etag is not None:
                return {"ETag": etag}
        return self._s3.put_object(Bucket=Bucket, Key=Key, Body=Body, Metadata=Metadata, ContentMD5=ContentMD5)

    def _send(self, bucket: str, key: str, body: bytes, metadata: dict[str, str], md5: str) -> Optional[str]:
        """The ETag of a 2xx answer, or None: the object goes again through `put_object`."""
        # botocore serialize.py `_render_uri_template`: the bucket label encoded with percent_encode's
        # default safe characters ("-_.~"), the greedy `{Key+}` with safe="/~"; UTF-8 first.
        path = f"/{quote(bucket, safe='-_.~')}/{quote(key.encode(), safe='/~')}"
        try:
            # The headers PutObject's model maps these members to (Metadata: x-amz-meta- prefix, ContentMD5:
            # Content-MD5), and the Host sent, all signed as botocore signs them (sigv4.py).
            headers = self._signer.signed("PUT", path, {
                "Host": self._host, **{f"x-amz-meta-{name}": value for name, value in metadata.items()}, "Content-MD5": md5})
            answered = self._before_send(path, headers, body)
            if answered is not None:
                return answered.headers.get("ETag", "") if 200 <= answered.status_code < 300 else None
            # Content-Length and User-Agent are not signed, as botocore adds or leaves them out.
            head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
            answer = self._connections.exchange(
                f"PUT {path} HTTP/1.1\r\n{head}Content-Length: {len(body)}\r\nUser-Agent: {USER_AGENT}\r\n\r\n".encode("latin-1"),
                body)
        except Exception:  # noqa: BLE001 - any failure goes to put_object, whose retries and errors are botocore's
            return None
        return answer.headers.get("etag", "") if 200 <= answer.status < 300 else None

    def _before_send(self, path: str, headers: dict[str, str], body: bytes):
        """As botocore endpoint.py `_do_get_response` does: a `before-send` handler may answer instead of the
        wire. It sees the request as botocore's own would show it (header values as bytes: endpoint.py _encode_headers)."""
        from botocore.awsrequest import AWSPreparedRequest, HeadersDict
        from botocore.hooks import first_non_none_response

        shown = HeadersDict({name: value.encode() for name, value in headers.items()})
        shown["Content-Length"] = str(len(body))
        request = AWSPreparedRequest("PUT", self._endpoint + path, shown, body, stream_output=False, context={})
        return first_non_none_response(self._s3.meta.events.emit("before-send.s3.PutObject", request=request))

    def close(self) -> None:
        if self._connections is not None:
            self._connections.close()
