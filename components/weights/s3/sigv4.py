"""AWS Signature Version 4 for the lean PUT (small_put.py): a request without a query string, whose
payload goes as `UNSIGNED-PAYLOAD` under its Content-MD5.

The algorithm is botocore's S3SigV4Auth (auth.py: canonical_request, string_to_sign, signature)
for that one shape of request, and tests/unit/test_s3_sigv4.py checks every header it adds against
botocore's for the same instant. botocore derives the signing key (four HMACs) again and builds
its canonical headers through the email package for every request; this derives the key once a
day and formats strings.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from typing import Optional

UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD"
SIGV4_TIMESTAMP = "%Y%m%dT%H%M%SZ"


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


class UnsignedPayloadSigner:
    """Signs requests of one access key to one region's `service`."""

    def __init__(self, access_key: str, secret_key: str, region: str, service: str = "s3"):
        self._access_key, self._secret_key = access_key, secret_key
        self._region, self._service = region, service
        self._keys: dict[str, bytes] = {}  # the day's signing key, by day
        self._lock = threading.Lock()

    def _signing_key(self, day: str) -> bytes:
        with self._lock:
            key = self._keys.get(day)
            if key is None:
                key = _hmac(f"AWS4{self._secret_key}".encode(), day)
                for part in (self._region, self._service, "aws4_request"):
                    key = _hmac(key, part)
                self._keys = {day: key}
            return key

    def signed(self, method: str, path: str, headers: dict[str, str], now: Optional[time.struct_time] = None) -> dict[str, str]:
        """`headers` (every one of them signed; unique names in any case) with X-Amz-Date,
        X-Amz-Content-SHA256 and Authorization added. `path` is the request target as sent: S3 signs it
        without normalizing it (auth.py S3SigV4Auth._normalize_url_path)."""
        stamp = time.strftime(SIGV4_TIMESTAMP, now or time.gmtime())
        out = {**headers, "X-Amz-Date": stamp, "X-Amz-Content-SHA256": UNSIGNED_PAYLOAD}
        # Lowercase(name) ":" Trimall(value), sorted by name (auth.py canonical_headers, _header_value).
        canonical = sorted((name.lower(), " ".join(value.split())) for name, value in out.items())
        names = ";".join(name for name, _ in canonical)
        request = "\n".join([method, path, "", *(f"{name}:{value}" for name, value in canonical), "", names, UNSIGNED_PAYLOAD])
        scope = f"{stamp[:8]}/{self._region}/{self._service}/aws4_request"
        to_sign = f"AWS4-HMAC-SHA256\n{stamp}\n{scope}\n{hashlib.sha256(request.encode()).hexdigest()}"
        signature = hmac.new(self._signing_key(stamp[:8]), to_sign.encode(), hashlib.sha256).hexdigest()
        out["Authorization"] = f"AWS4-HMAC-SHA256 Credential={self._access_key}/{scope}, SignedHeaders={names}, Signature={signature}"
        return out
