"""How the weight upload uses the connection, against both loopback S3 servers (moto, SeaweedFS):
which requests wait for the server's 100 Continue, and large files sent side by side."""

from __future__ import annotations

import os
import threading

from inference_platform.weights.s3 import client as s3client
from inference_platform.weights.s3 import upload as s3upload
from inference_platform.weights.s3.bucket import BucketProvider
from inference_platform.weights.s3.upload import sync_tree

pytest_plugins = ["tests.support.s3server"]

PART = 5 * 1024 * 1024


def new_bucket(server, tag: str) -> str:
    bucket = server.bucket_name(tag)
    BucketProvider().create(server.props(bucket=bucket, versioning=True, noncurrentDays=7, forceDestroy=False, adopt=False))
    return bucket


def test_small_bodies_go_with_their_headers_and_only_large_ones_wait_for_100_continue(s3_server):
    props = s3_server.props(bucket=new_bucket(s3_server, "expect"))
    s3 = s3client.client(props)
    expects: dict[str, bytes | str | None] = {}
    s3.meta.events.register("before-send.s3.PutObject",
                            lambda request, **_: expects.__setitem__(request.url.rsplit("/", 1)[1], request.headers.get("Expect")))
    sizes = {"empty": 0, "small": 64 * 1024, "large": s3client.EXPECT_CONTINUE_BYTES}
    for key, size in sizes.items():
        s3.put_object(Bucket=props["bucket"], Key=key, Body=os.urandom(size))
    assert expects == {"empty": None, "small": None, "large": b"100-continue"}
    assert {key: s3_server.client().head_object(Bucket=props["bucket"], Key=key)["ContentLength"] for key in sizes} == sizes


def test_large_files_are_sent_side_by_side_with_no_more_parts_in_flight_than_workers(s3_server, tmp_path, monkeypatch):
    monkeypatch.setattr(s3upload, "MULTIPART_BYTES", PART)
    root = tmp_path / "repo"
    (root / "llm").mkdir(parents=True)
    bodies = {f"llm/shard-{i}.bin": os.urandom(2 * PART + 1024) for i in range(2)}  # three parts each
    for rel, body in bodies.items():
        (root / rel).write_bytes(body)
    props = s3_server.props(bucket=new_bucket(s3_server, "side"), source=str(root), prefix="m")
    s3 = s3client.client(props)
    # The first part of each file waits for the other's: sent one file after the other, the barrier breaks.
    both_started, lock, in_flight, most = threading.Barrier(2, timeout=60), threading.Lock(), [0], [0]
    send_part = s3.upload_part

    def upload_part(**kwargs):
        with lock:
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
        try:
            if kwargs["PartNumber"] == 1:
                both_started.wait()
            return send_part(**kwargs)
        finally:
            with lock:
                in_flight[0] -= 1

    s3.upload_part = upload_part
    assert sync_tree(s3, props, workers=3)["uploadedFiles"] == 2
    assert most[0] <= 3
    c = s3_server.client()
    assert {rel: c.get_object(Bucket=props["bucket"], Key=f"m/{rel}")["Body"].read() for rel in bodies} == bodies



def test_a_file_above_the_multipart_size_goes_in_parts_of_16_mib(s3_server, tmp_path, monkeypatch):
    monkeypatch.setattr(s3upload, "MULTIPART_BYTES", 20 * 1024 * 1024)
    root = tmp_path / "repo"
    (root / "llm").mkdir(parents=True)
    body = os.urandom(40 * 1024 * 1024)
    (root / "llm/shard.bin").write_bytes(body)
    props = s3_server.props(bucket=new_bucket(s3_server, "parts"), source=str(root), prefix="m")
    s3 = s3client.client(props)
    parts: list[int] = []
    send_part = s3.upload_part
    s3.upload_part = lambda **kwargs: parts.append(len(kwargs["Body"])) or send_part(**kwargs)
    assert sync_tree(s3, props, workers=2)["uploadedFiles"] == 1
    assert sorted(parts) == sorted([s3upload.PART_BYTES, s3upload.PART_BYTES, 8 * 1024 * 1024]) and s3upload.PART_BYTES == 16 * 1024 * 1024
    assert s3_server.client().get_object(Bucket=props["bucket"], Key="m/llm/shard.bin")["Body"].read() == body


def test_uploaded_bodies_go_unsigned_under_their_content_md5_over_http_and_the_rest_stay_signed(s3_server, tmp_path, monkeypatch):
    monkeypatch.setattr(s3upload, "MULTIPART_BYTES", PART)
    root = tmp_path / "repo"
    (root / "llm").mkdir(parents=True)
    bodies = {"llm/config.pbtxt": b'name: "llm"\nbackend: "python"\n', "llm/shard.bin": os.urandom(PART + 1024)}
    for rel, body in bodies.items():
        (root / rel).write_bytes(body)
    props = s3_server.props(bucket=new_bucket(s3_server, "unsigned"), source=str(root), prefix="m")
    assert props["endpoint"].startswith("http://")
    s3 = s3upload.upload_client(props)
    sent: list[tuple[str, str, bool]] = []
    s3.meta.events.register("before-send.s3", lambda request, event_name, **_: sent.append(
        (event_name.rsplit(".", 1)[1], request.headers["X-Amz-Content-SHA256"].decode(), "Content-MD5" in request.headers)))
    assert sync_tree(s3, props, workers=2)["uploadedFiles"] == 2
    payloads = {(operation, sha if sha == "UNSIGNED-PAYLOAD" else "sha256", md5) for operation, sha, md5 in sent}
    assert payloads >= {("PutObject", "UNSIGNED-PAYLOAD", True), ("UploadPart", "UNSIGNED-PAYLOAD", True),
                        ("CompleteMultipartUpload", "sha256", False)}
    assert not [entry for entry in sent if entry[1] == "UNSIGNED-PAYLOAD" and not entry[2]]
    c = s3_server.client()
    assert {rel: c.get_object(Bucket=props["bucket"], Key=f"m/{rel}")["Body"].read() for rel in bodies} == bodies
