"""The boto3 client the providers use, its errors as one-line messages, and Content-MD5 checksums.

Checksums: botocore (>= 1.36) puts a CRC32 header, not Content-MD5, on the operations the
S3 API requires a checksum for (DeleteObjects, the bucket configuration PUTs); servers that
predate flexible checksums refuse those. The client sends Content-MD5 there instead, and the
uploads put it on every object and part (AWS and SeaweedFS refuse a body that does not match
it); botocore adds no other checksum, and those bodies go with `UNSIGNED-PAYLOAD` instead of their
sha256 in the signature (see `unsigned_payload_under_content_md5`).

Expect: 100-continue: botocore puts it on every PUT with a body, so each small object waits a
round trip for the server's interim response before its bytes go; the client asks for it only
from 2 MiB up, as the AWS SDK for Go does (see `expect_continue_for_large_bodies`).

A client is built for every call from the resource's properties, where the credentials arrive as
secret inputs: the providers hold none (see provider.py). What the clients share is botocore's
session (the service model and endpoint rules it has read), never credentials.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import os
import threading
from typing import Any, Optional
from urllib.parse import urlparse

CREDENTIAL_KEYS = ("accessKeyId", "secretAccessKey")
# Error codes of servers that lack an optional feature (MinIO, Ceph RGW, ...).
UNSUPPORTED_CODES = frozenset({"NotImplemented", "XNotImplemented", "MethodNotAllowed", "NotSupported"})
CREDENTIAL_CODES = frozenset({
    "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidClientTokenId", "InvalidSecurity",
    "AuthorizationHeaderMalformed", "ExpiredToken", "InvalidToken",
})
# AccessDenied: the keys are valid but lack a permission. The IAM action of the operations whose
# refusal is not self-explanatory, from the AWS S3 API reference (API_ListBuckets.html: "you must
# have the s3:ListAllMyBuckets permission"; API_HeadBucket.html: "permissions to perform the
# s3:ListBucket action"). Other refusals name the operation.
PERMISSION_OF = {"ListBuckets": "s3:ListAllMyBuckets", "HeadBucket": "s3:ListBucket"}
DEFAULT_PORTS = {"http": 80, "https": 443}
_SECRET_SIG = ("4dabf18193072939515e22adb298388d", "1b47061264138c4ac30d75fd1eb44270")


class S3Error(Exception):
    """A failure of a bucket or upload operation, phrased in one line for the person running `pulumi up`."""


def plain(value: Any) -> Any:
    # Secrets may arrive wrapped in Pulumi's wire signature when the engine keeps them.
    if isinstance(value, dict) and value.get(_SECRET_SIG[0]) == _SECRET_SIG[1]:
        return value.get("value")
    return value


def endpoint_problem(endpoint: Any) -> Optional[str]:
    """Why an endpoint URL is unusable, or None."""
    if not isinstance(endpoint, str):
        return "endpoint must be a URL such as https://s3.example.cloud"
    parsed = urlparse(endpoint)
    try:
        parsed.port  # noqa: B018 - raises on a malformed port
    except ValueError:
        return f"endpoint {endpoint!r} has an invalid port"
    if parsed.scheme not in ("http", "https") or not parsed.hostname or parsed.path not in ("", "/"):
        return f"endpoint {endpoint!r} is not a URL such as https://s3.example.cloud (scheme, host and optional port only)"
    return None


def endpoint_server(endpoint: str) -> tuple[str, Optional[int]]:
    """The server an endpoint URL reaches: host (any case) and port, a scheme's default port as none.

    So `http://h`, `https://H/` and `https://h:443` are one server: the same buckets behind
    another scheme or spelling, which must never look like a new bucket.
    """
    parsed = urlparse(endpoint)
    port = parsed.port if parsed.port != DEFAULT_PORTS.get(parsed.scheme) else None
    return (parsed.hostname or "").lower(), port


def same_server(a: Any, b: Any) -> bool:
    a, b = plain(a), plain(b)
    if not (isinstance(a, str) and isinstance(b, str)) or endpoint_problem(a) or endpoint_problem(b):
        return a == b
    return endpoint_server(a) == endpoint_server(b)


_SESSIONS: dict[bool, Any] = {}
_SESSIONS_LOCK = threading.Lock()


def _as_sent(text: str) -> str:
    return text


def _shared_session(raw_timestamps: bool):
    """The process's botocore session: its loader keeps the S3 service model and endpoint rules once
    read (a session of its own per client read them from disk each time: about 50 ms of CPU).

    Credentials go to each client, never to the session, so clients of other keys cannot mix them;
    botocore sessions are not thread-safe, hence the lock.
    """
    import botocore.session

    with _SESSIONS_LOCK:
        session = _SESSIONS.get(raw_timestamps)
        if session is None:
            session = _SESSIONS[raw_timestamps] = botocore.session.Session()
            if raw_timestamps:
                # botocore parsers.py ResponseParserFactory.set_parser_defaults(timestamp_parser=...): the
                # uploads read no timestamp, and parsing each listed key's LastModified with dateutil was
                # most of the CPU of an unchanged re-run's listing.
                session.get_component("response_parser_factory").set_parser_defaults(timestamp_parser=_as_sent)
        return session


def _client_from_shared_session(raw_timestamps: bool, **kwargs):
    session = _shared_session(raw_timestamps)
    with _SESSIONS_LOCK:
        return session.create_client("s3", **kwargs)


def tls_verify() -> bool | str:
    """What a client of `client()` verifies https servers against: a CA bundle's path, or True for botocore's own.

    `client()` passes no `verify`, so botocore takes the `ca_bundle` setting (AWS_CA_BUNDLE or the
    config file; session.py create_client), else REQUESTS_CA_BUNDLE, else True (endpoint.py
    _get_verify_value)."""
    session = _shared_session(raw_timestamps=True)
    with _SESSIONS_LOCK:
        ca_bundle = session.get_config_variable("ca_bundle")
    return ca_bundle or os.environ.get("REQUESTS_CA_BUNDLE") or True


def client(props: dict[str, Any], raw_timestamps: bool = False):
    """A boto3 S3 client for the resource's endpoint, region and credentials (timestamps in
    responses left as the server's text with `raw_timestamps`)."""
    from botocore.config import Config
    from botocore.handlers import add_expect_header

    endpoint = plain(props.get("endpoint"))
    problem = endpoint_problem(endpoint)
    if problem:
        raise S3Error(problem)
    key_id, secret = (plain(props.get(k)) for k in CREDENTIAL_KEYS)
    if not key_id or not secret:
        raise S3Error("S3 credentials are missing: set inference-platform:s3AccessKeyId and s3SecretAccessKey as secrets")
    config = Config(
        region_name=plain(props.get("region")) or "us-east-1",
        # Path-style addressing works on every S3-compatible server. Checksums: see the module docstring
        # (botocore's default, when_supported, would add CRC32 to every upload; not every server knows it).
        s3={"addressing_style": "path"},
        request_checksum_calculation="when_required",
        response_checksum_validation="when_required",
        retries={"max_attempts": 3, "mode": "standard"},
        connect_timeout=10,
        read_timeout=120,
        max_pool_connections=32,
    )
    try:
        s3 = _client_from_shared_session(raw_timestamps, endpoint_url=endpoint, config=config,
                                         aws_access_key_id=key_id, aws_secret_access_key=secret)
    except ValueError as err:
        raise S3Error(f"endpoint {endpoint!r} is not usable: {err}") from None
    s3.meta.events.register("before-sign.s3", md5_instead_of_flexible_checksum)
    unsigned = s3.meta.config.merge(Config(s3={**(s3.meta.config.s3 or {}), "payload_signing_enabled": False}))
    s3.meta.events.register("before-sign.s3", functools.partial(unsigned_payload_under_content_md5, unsigned=unsigned))
    # The unregister is botocore's own advice for dropping the header (boto/botocore#1659).
    s3.meta.events.unregister("before-call.s3", add_expect_header)
    s3.meta.events.register("before-call.s3", expect_continue_for_large_bodies)
    return s3


# aws-sdk-go service/s3/platform_handlers_go1.6.go `add100Continue`: "Ignore requests smaller than
# 2MB. This helps prevent delaying requests unnecessarily."
EXPECT_CONTINUE_BYTES = 2 * 1024 * 1024


def expect_continue_for_large_bodies(model, params, **_) -> None:
    """botocore's `add_expect_header` (handlers.py), from `EXPECT_CONTINUE_BYTES` up only.

    A large body still waits for the server's 100 Continue, so a refused request (wrong
    keys, no bucket) does not send it; a small one goes with its headers, saving the round
    trip that dominated many small objects. (Also keeps the header off empty bodies, which
    Go servers such as SeaweedFS answer without an interim 100: boto/botocore#3755.)
    """
    from botocore.utils import determine_content_length

    body = params.get("body")
    if model.http.get("method", "") in ("PUT", "POST") and hasattr(body, "read"):
        if (determine_content_length(body) or 0) >= EXPECT_CONTINUE_BYTES:
            params["headers"]["Expect"] = "100-continue"


def content_md5(body: bytes) -> str:
    """The Content-MD5 header value of `body`."""
    return base64.b64encode(hashlib.md5(body, usedforsecurity=False).digest()).decode()


FLEXIBLE_CHECKSUM_HEADERS = ("x-amz-checksum-", "x-amz-sdk-checksum-algorithm")


def md5_instead_of_flexible_checksum(request, **_) -> None:
    """Before signing: where botocore put a flexible checksum on a body in memory, send Content-MD5 instead.

    With ``request_checksum_calculation="when_required"`` botocore adds one only where
    the API requires a checksum; AWS accepts Content-MD5 there, and so does every
    server that predates flexible checksums (which refuse CRC32 alone).
    """
    flexible = [name for name in request.headers.keys() if name.lower().startswith(FLEXIBLE_CHECKSUM_HEADERS)]
    if not flexible or not isinstance(request.body, (bytes, bytearray)):
        return
    for name in flexible + ["Content-MD5"]:
        del request.headers[name]  # removes every copy; setting would add another
    request.headers["Content-MD5"] = content_md5(bytes(request.body))


def unsigned_payload_under_content_md5(request, unsigned, **_) -> None:
    """Before signing an upload's body (PutObject, UploadPart) that carries Content-MD5: `UNSIGNED-PAYLOAD`
    over plain http too, as botocore already does over https.

    botocore auth.py `S3SigV4Auth._should_sha256_sign_payload` signs every payload over http (its own
    sha256 of the body, a third hash of every byte sent) and, over https, leaves streaming bodies with a
    checksum header unsigned; the explicit `payload_signing_enabled` of the request's `client_config`
    decides first. Content-MD5 is a signed header (not in `SIGNED_HEADERS_BLACKLIST`), so the
    server still refuses a body that is not the one signed for; the upload hashes what it sends itself.
    """
    if "Content-MD5" in request.headers and request.context.get("has_streaming_input"):
        request.context["client_config"] = unsigned


def error_code(err: Exception) -> str:
    return str(getattr(err, "response", {}).get("Error", {}).get("Code", ""))


def http_status(err: Exception) -> int:
    return int(getattr(err, "response", {}).get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)


def explain(err: Exception, what: str, endpoint: str) -> S3Error:
    """Turn a botocore error into one clear sentence, on one line."""
    if isinstance(err, S3Error):
        return err
    return S3Error(" ".join(_explanation(err, what, endpoint).split()))


def _explanation(err: Exception, what: str, endpoint: str) -> str:
    from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError

    if isinstance(err, EndpointConnectionError):
        return f"{what}: cannot reach the S3 endpoint {endpoint} ({err})"
    if isinstance(err, ClientError):
        code, status = error_code(err), http_status(err)
        message = err.response.get("Error", {}).get("Message", "")
        operation = getattr(err, "operation_name", "") or "the request"
        needs = PERMISSION_OF.get(operation)
        if code == "AccessDenied":
            return (f"{what}: the S3 endpoint {endpoint} denied {operation} to these keys (AccessDenied: {message}); "
                    + (f"they need the permission {needs}" if needs else f"grant them the permission {operation} needs"))
        if status == 403 and code in ("", "403", "Forbidden"):
            # A HEAD response has no body: wrong keys and a missing permission look the same.
            return (f"{what}: the S3 endpoint {endpoint} refused {operation} (403, no reason given); check the secrets "
                    "inference-platform:s3AccessKeyId and s3SecretAccessKey" + (f", and that they have {needs}" if needs else ""))
        if code in CREDENTIAL_CODES or status == 403:
            return (
                f"{what}: the S3 endpoint {endpoint} refused the credentials ({code or status}: {message}); "
                "check the secrets inference-platform:s3AccessKeyId and s3SecretAccessKey"
            )
        return f"{what}: {code or status}: {message}".rstrip(": ")
    if isinstance(err, BotoCoreError):
        return f"{what}: S3 endpoint {endpoint}: {err}"
    return f"{what}: {type(err).__name__}: {err}"


def call_or_explain(props: dict[str, Any], what: str, fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except Exception as err:  # noqa: BLE001 - every failure becomes one clear S3Error
        raise explain(err, what, plain(props.get("endpoint"))) from None


def unsupported(err: Exception) -> bool:
    return error_code(err) in UNSUPPORTED_CODES or http_status(err) == 501
