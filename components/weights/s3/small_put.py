"""PutObject of a small upload body without botocore's per-request path, on the happy path only.

A 64 KiB PUT through `put_object` costs about 0.7 ms of CPU, most of it botocore building,
serializing, routing (endpoint rules), hooking, signing and parsing one request; with many small
files that CPU, on one interpreter, bounds the upload. `SmallPut` builds the same request itself
(path-style URL, Content-MD5, the `x-amz-meta-*` headers, `UNSIGNED-PAYLOAD` as the client does:
client.py), signs it with botocore's own `S3SigV4Auth` and sends it through the client's own HTTP
session (its connection pool, TLS verification and CA bundle, proxies and timeouts), about
0.4 ms. Only a 2xx answer is taken; anything else (an error status, a reset connection, a
timeout) sends the object again with `put_object`, so error parsing, the retry decisions and
backoff and every error message stay botocore's: a fault costs one more attempt, never a
different outcome.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from inference_platform.weights.s3.client import CREDENTIAL_KEYS, EXPECT_CONTINUE_BYTES, plain


class SmallPut:
    """`put_object(Bucket, Key, Body, Metadata, ContentMD5)` of a client made by `client()`, lean below
    `EXPECT_CONTINUE_BYTES` (larger bodies wait for 100 Continue, which only botocore's path does)."""

    def __init__(self, s3, props: dict[str, Any]):
        from botocore.auth import S3SigV4Auth
        from botocore.config import Config
        from botocore.credentials import Credentials

        self._s3 = s3
        # The keys `client()` gave the client, from the same resource properties.
        credentials = Credentials(*(plain(props[k]) for k in CREDENTIAL_KEYS))
        self._signer = S3SigV4Auth(credentials, "s3", s3.meta.region_name)
        # botocore endpoint.py Endpoint: `http_session` sends every request of the client.
        self._http = s3._endpoint.http_session
        self._endpoint = s3.meta.endpoint_url.rstrip("/")
        # auth.py S3SigV4Auth._should_sha256_sign_payload reads the request context's client_config first:
        # `UNSIGNED-PAYLOAD`, as client.py `unsigned_payload_under_content_md5` makes the client send.
        self._unsigned = Config(s3={"payload_signing_enabled": False})

    def __call__(self, *, Bucket: str, Key: str, Body: bytes, Metadata: dict[str, str], ContentMD5: str) -> dict[str, Any]:
        if len(Body) < EXPECT_CONTINUE_BYTES:
            response = self._send(Bucket, Key, Body, Metadata, ContentMD5)
            if response is not None and 200 <= response.status_code < 300:
                return {"ETag": response.headers.get("ETag", "")}
        return self._s3.put_object(Bucket=Bucket, Key=Key, Body=Body, Metadata=Metadata, ContentMD5=ContentMD5)

    def _send(self, bucket: str, key: str, body: bytes, metadata: dict[str, str], md5: str):
        from botocore.awsrequest import AWSRequest
        from botocore.hooks import first_non_none_response

        # botocore serialize.py `_render_uri_template`: the bucket label encoded with percent_encode's
        # default safe characters ("-_.~"), the greedy `{Key+}` with safe="/~"; UTF-8 first.
        url = f"{self._endpoint}/{quote(bucket, safe='-_.~')}/{quote(key.encode(), safe='/~')}"
        # The headers PutObject's model maps these members to (Metadata: x-amz-meta- prefix, ContentMD5: Content-MD5).
        headers = {**{f"x-amz-meta-{name}": value for name, value in metadata.items()}, "Content-MD5": md5}
        request = AWSRequest("PUT", url, headers=headers, data=body)
        request.context["client_config"] = self._unsigned
        try:
            self._signer.add_auth(request)
            prepared = request.prepare()
            # As botocore endpoint.py `_do_get_response` does: a `before-send` handler may answer instead of the wire.
            answers = self._s3.meta.events.emit("before-send.s3.PutObject", request=prepared)
            return first_non_none_response(answers) or self._http.send(prepared)
        except Exception:  # noqa: BLE001 - any failure goes to put_object, whose retries and errors are botocore's
            return None
