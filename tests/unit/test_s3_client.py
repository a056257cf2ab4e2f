"""The S3 clients the providers build: what they share within a process, and what an upload's client parses."""

from __future__ import annotations

import datetime

from botocore.awsrequest import AWSResponse
from botocore.loaders import JSONFileLoader

from inference_platform.weights.s3.client import client
from inference_platform.weights.s3.upload import upload_client

PROPS = {"endpoint": "http://127.0.0.1:9", "region": "us-east-1", "accessKeyId": "AKIAONE", "secretAccessKey": "one"}
LISTING = (b'<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
           b"<Name>b</Name><Prefix>m/</Prefix><KeyCount>1</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>"
           b'<Contents><Key>m/a</Key><LastModified>2026-11-27T06:00:00.000Z</LastModified><ETag>"abc"</ETag>'
           b"<Size>3</Size><StorageClass>STANDARD</StorageClass></Contents></ListBucketResult>")


class _Raw:
    def __init__(self, body: bytes):
        self.body = body

    def stream(self, **_):
        yield self.body


def _listed(s3) -> dict:
    """One ListObjectsV2 answered with LISTING, parsed by the client as from a server."""
    s3.meta.events.register("before-send.s3.ListObjectsV2",
                            lambda request, **_: AWSResponse(request.url, 200, {}, _Raw(LISTING)))
    return s3.list_objects_v2(Bucket="b", Prefix="m/")["Contents"][0]


def test_a_second_client_in_the_process_reads_no_service_model_from_disk(monkeypatch):
    client(PROPS)
    loaded = []
    load = JSONFileLoader.load_file
    monkeypatch.setattr(JSONFileLoader, "load_file", lambda self, path, *a, **k: loaded.append(path) or load(self, path, *a, **k))
    client({**PROPS, "accessKeyId": "AKIATWO", "secretAccessKey": "two"})
    assert loaded == []


def test_clients_of_other_keys_sign_with_their_own_keys_though_they_share_the_session():
    one, two = client(PROPS), client({**PROPS, "accessKeyId": "AKIATWO", "secretAccessKey": "two"})
    signed = []
    for s3 in (one, two):
        s3.meta.events.register("before-send.s3.ListObjectsV2",
                                lambda request, **_: signed.append(request.headers["Authorization"].decode()) or
                                AWSResponse(request.url, 200, {}, _Raw(LISTING)))
        s3.list_objects_v2(Bucket="b")
    assert "Credential=AKIAONE/" in signed[0] and "Credential=AKIATWO/" in signed[1]


def test_an_uploads_listing_keeps_the_servers_timestamp_text_and_other_clients_parse_it():
    assert _listed(upload_client(PROPS))["LastModified"] == "2026-11-27T06:00:00.000Z"
    assert _listed(client(PROPS))["LastModified"] == datetime.datetime(2026, 11, 27, 6, tzinfo=datetime.timezone.utc)
