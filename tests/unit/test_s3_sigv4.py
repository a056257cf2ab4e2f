"""The lean PUT's signer (sigv4.py) signs as botocore's S3SigV4Auth does, header for header, at the same instant."""

from __future__ import annotations

import datetime
import time

import pytest
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

from inference_platform.weights.s3.sigv4 import UnsignedPayloadSigner

ENDPOINT = "https://s3.example.cloud:8443"
CASES = [
    ("/ours-b/model%20a/1/%C3%BC%2Bx~y%3D%28z%29.bin", {"Host": "s3.example.cloud:8443", "x-amz-meta-sha256": "ab" * 32,
                                                       "Content-MD5": "1B2M2Y8AsgTpgAmY7PhCfg=="}),
    ("/b/k", {"Host": "s3.example.cloud:8443", "Content-MD5": "  spaced   out  "}),  # Trimall of values
    ("/b/deep/er/key.pbtxt", {"Host": "s3.example.cloud:8443", "X-Amz-Meta-Sha256": "cd" * 32, "content-md5": "x=="}),
]


def _botocore(path: str, headers: dict[str, str], at: datetime.datetime, monkeypatch, region: str) -> dict[str, str]:
    monkeypatch.setattr("botocore.auth.get_current_datetime", lambda: at)
    request = AWSRequest("PUT", ENDPOINT + path, headers=dict(headers), data=b"body")
    request.context["client_config"] = Config(s3={"payload_signing_enabled": False})
    S3SigV4Auth(Credentials("AKIAONE", "secret/one+"), "s3", region).add_auth(request)
    return dict(request.headers.items())


@pytest.mark.parametrize(("path", "headers"), CASES)
@pytest.mark.parametrize("at", [datetime.datetime(2026, 11, 27, 9, 30, 5), datetime.datetime(2027, 1, 1, 0, 0, 0)])
def test_every_header_is_botocores(path, headers, at, monkeypatch):
    signer = UnsignedPayloadSigner("AKIAONE", "secret/one+", "eu-west-1")
    ours = signer.signed("PUT", path, headers, now=at.timetuple())
    assert ours == _botocore(path, headers, at, monkeypatch, "eu-west-1")
    assert ours["X-Amz-Content-SHA256"] == "UNSIGNED-PAYLOAD"


def test_the_days_key_is_derived_again_on_a_new_day(monkeypatch):
    signer = UnsignedPayloadSigner("AKIAONE", "secret/one+", "us-east-1")
    path, headers = CASES[0]
    for at in (datetime.datetime(2026, 11, 27, 23, 59, 59), datetime.datetime(2026, 11, 28, 0, 0, 1)):
        assert signer.signed("PUT", path, headers, now=at.timetuple()) == _botocore(path, headers, at, monkeypatch, "us-east-1")


def test_the_current_time_is_utc():
    signed = UnsignedPayloadSigner("AKIAONE", "s", "eu-west-1").signed("PUT", "/b/k", {"Host": "h"})
    assert abs(time.mktime(time.strptime(signed["X-Amz-Date"], "%Y%m%dT%H%M%SZ")) - time.mktime(time.gmtime())) < 5
