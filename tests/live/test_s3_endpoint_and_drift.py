"""What a real `pulumi up` does to the bucket and uploads on two day-2 events, against real servers:
the endpoint is spelt differently or moves, and objects vanish behind the upload manifest's back."""

from __future__ import annotations

from collections import Counter

from inference_platform.weights.s3 import client as s3client
from inference_platform.weights.s3 import tree as s3tree
from inference_platform.weights.s3.bucket import BucketProvider
from inference_platform.weights.s3.client import S3Error
from inference_platform.weights.s3.upload import UploadProvider
from tests.live.test_s3bucket import bucket_props, tree  # noqa: F401 - `tree` is a fixture

pytest_plugins = ["tests.support.s3server"]


def engine_applies(provider, id_: str, olds: dict, news: dict) -> dict:
    """What the engine does with the provider's diff: an update, or create-before-delete where the
    old half is deleted with its OLD outputs (pulumi/pulumi pkg/resource/deploy/step.go, DeleteStep)."""
    diff = provider.diff(id_, olds, news)
    if not diff.changes:
        return olds
    if diff.replaces:
        created = provider.create(news)
        provider.delete(id_, olds)
        return created.outs
    return provider.update(id_, olds, news).outs


def keys(server, bucket: str) -> list[str]:
    return sorted(o["Key"] for o in server.client().list_objects_v2(Bucket=bucket).get("Contents", []))


def test_an_endpoint_moved_to_another_name_of_the_same_server_keeps_every_object(s3_server):
    p, bucket = BucketProvider(), s3_server.bucket_name("move")
    old = p.create(bucket_props(s3_server, bucket, forceDestroy=True)).outs
    s3_server.client().put_object(Bucket=bucket, Key="m/model.onnx", Body=b"weights")
    alias = s3_server.endpoint.replace("127.0.0.1", "localhost")
    moved = bucket_props(s3_server, bucket, endpoint=alias, adopt=True)
    now = engine_applies(p, bucket, old, moved)
    assert now["adopted"] is True and now["endpoint"] == alias
    assert keys(s3_server, bucket) == ["m/model.onnx"]
    p.delete(bucket, now)  # leaving the stack: an adopted bucket is only forgotten
    assert keys(s3_server, bucket) == ["m/model.onnx"]


def test_a_bucket_found_at_a_new_endpoint_is_used_only_when_adopted(s3_server):
    p, bucket = BucketProvider(), s3_server.bucket_name("move-noadopt")
    old = p.create(bucket_props(s3_server, bucket)).outs
    s3_server.client().put_object(Bucket=bucket, Key="kept", Body=b"x")
    alias = s3_server.endpoint.replace("127.0.0.1", "localhost")
    try:
        engine_applies(p, bucket, old, bucket_props(s3_server, bucket, endpoint=alias))
        raise AssertionError("moving to an endpoint where the bucket exists needs adopt")
    except S3Error as err:
        message = str(err)
    assert message.startswith(f"bucket {bucket} already exists at the new endpoint {alias}") and "\n" not in message
    assert "set weightCaches.s3.adopt: true" in message and keys(s3_server, bucket) == ["kept"]


def test_an_endpoint_in_another_spelling_changes_nothing(s3_server):
    p, bucket = BucketProvider(), s3_server.bucket_name("spelling")
    old = p.create(bucket_props(s3_server, bucket)).outs
    respelt = s3_server.endpoint.upper().replace("HTTP://", "http://") + "/"
    assert p.diff(bucket, old, bucket_props(s3_server, bucket, endpoint=respelt)).changes is False


def test_an_up_without_refresh_sends_again_objects_lost_or_rewritten_behind_the_manifest(s3_server, tree):  # noqa: F811
    bucket = s3_server.bucket_name("lost")
    BucketProvider().create(bucket_props(s3_server, bucket))
    props = s3_server.props(bucket=bucket, source=str(tree), prefix="m", fingerprint=s3tree.fingerprint(str(tree)))
    p = UploadProvider()
    created = p.create(props)
    assert p.diff(created.id, created.outs, props).changes is False
    c = s3_server.client()
    c.delete_object(Bucket=bucket, Key="m/resnet/config.pbtxt")
    c.put_object(Bucket=bucket, Key="m/bert/config.pbtxt", Body=b'name: "tampered"\n'[: len(b'name: "bert"\n')])
    assert p.diff(created.id, created.outs, props).changes is True
    repaired = p.update(created.id, created.outs, props).outs
    assert repaired["uploadedFiles"] == 2 and repaired["contentSha256"] == created.outs["contentSha256"]
    assert c.get_object(Bucket=bucket, Key="m/resnet/config.pbtxt")["Body"].read() == b'name: "resnet"\n'
    assert c.get_object(Bucket=bucket, Key="m/bert/config.pbtxt")["Body"].read() == b'name: "bert"\n'
    assert p.diff(created.id, repaired, props).changes is False


def test_an_unchanged_upload_is_checked_with_one_listing_and_no_head_per_object(s3_server, tree, monkeypatch):  # noqa: F811
    bucket = s3_server.bucket_name("cheap")
    BucketProvider().create(bucket_props(s3_server, bucket))
    props = s3_server.props(bucket=bucket, source=str(tree), prefix="m", fingerprint=s3tree.fingerprint(str(tree)))
    p = UploadProvider()
    created = p.create(props)
    calls: Counter = Counter()
    real_client = s3client.client

    def counting(props_, **options):
        s3 = real_client(props_, **options)
        s3.meta.events.register("before-call.s3", lambda model, **_: calls.update([model.name]))
        return s3

    monkeypatch.setattr("inference_platform.weights.s3.upload.client", counting)
    assert p.diff(created.id, created.outs, props).changes is False
    assert calls == Counter({"GetObject": 1, "ListObjectsV2": 1})
