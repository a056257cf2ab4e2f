"""The bucket and upload dynamic providers against real S3-compatible servers on loopback (moto, SeaweedFS)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import pickle
import subprocess
import sys
import types
from collections import Counter
from unittest import mock

import pytest
from botocore.exceptions import ClientError

from inference_platform.weights.s3 import bucket as s3bucket
from inference_platform.weights.s3 import client as s3client
from inference_platform.weights.s3 import manifest as s3manifest
from inference_platform.weights.s3 import tree as s3tree
from inference_platform.weights.s3 import upload as s3upload
from inference_platform.weights.s3.bucket import BucketProvider
from inference_platform.weights.s3.client import S3Error
from inference_platform.weights.s3.upload import UploadProvider, sync_tree
from tests.conftest import ROOT, render_raw, stack_plan

pytest_plugins = ["tests.support.s3server"]

BUCKET_TYPE = "pulumi-python:dynamic/s3:Bucket"


def bucket_props(server, bucket: str, **extra) -> dict:
    return server.props(**{"bucket": bucket, "versioning": True, "noncurrentDays": 14, "forceDestroy": False, "adopt": False, **extra})


def versions(server, bucket: str) -> list[tuple[str, str]]:
    page = server.client().list_object_versions(Bucket=bucket)
    return sorted((v["Key"], v["VersionId"]) for v in page.get("Versions", []))


def lifecycle_days(server, bucket: str) -> int:
    rules = server.client().get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]
    (ours,) = [r for r in rules if r["ID"] == s3bucket.LIFECYCLE_RULE_ID]
    return ours["NoncurrentVersionExpiration"]["NoncurrentDays"]


# --------------------------------------------------------------------------- bucket


def test_create_read_diff_update_delete(s3_server):
    p, bucket = BucketProvider(), s3_server.bucket_name("crud")
    props = bucket_props(s3_server, bucket)
    created = p.create(props)
    assert created.id == bucket and created.outs["adopted"] is False
    c = s3_server.client()
    # Read back from the server, not from our own outputs.
    assert c.get_bucket_versioning(Bucket=bucket)["Status"] == "Enabled"
    assert lifecycle_days(s3_server, bucket) == 14
    assert c.get_bucket_ownership_controls(Bucket=bucket)["OwnershipControls"]["Rules"] == [{"ObjectOwnership": "BucketOwnerEnforced"}]
    assert created.outs["objectOwnership"] == "BucketOwnerEnforced"
    if created.outs["publicAccessBlocked"] is not None:  # SeaweedFS has no public access block (NotImplemented)
        block = c.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"]
        assert all(block.values()) and created.outs["publicAccessBlocked"] is True

    read = p.read(bucket, created.outs)
    assert read.id == bucket
    assert read.outs["versioning"] is True and read.outs["noncurrentDays"] == 14
    assert p.diff(bucket, read.outs, props).changes is False

    changed = {**props, "noncurrentDays": 7, "versioning": False}
    diff = p.diff(bucket, created.outs, changed)
    assert diff.changes is True and diff.replaces == []
    updated = p.update(bucket, created.outs, changed)
    assert lifecycle_days(s3_server, bucket) == 7
    assert c.get_bucket_versioning(Bucket=bucket)["Status"] == "Suspended"
    assert updated.outs["versioningStatus"] == "Suspended"

    p.delete(bucket, updated.outs)
    assert bucket not in [b["Name"] for b in c.list_buckets()["Buckets"]]
    assert p.read(bucket, updated.outs).id is None


def test_only_a_new_bucket_name_replaces_and_an_endpoint_change_is_an_update():
    p = BucketProvider()
    olds = {"bucket": "a", "endpoint": "http://x:1", "region": "r", "versioning": True, "noncurrentDays": 3, "forceDestroy": False,
            "accessKeyId": "k", "secretAccessKey": "s"}
    for key, value in [("region", "r2"), ("versioning", False), ("noncurrentDays", 9), ("forceDestroy", True), ("secretAccessKey", "s2"),
                       ("adopt", True)]:
        d = p.diff("a", olds, {**olds, key: value})
        assert d.changes and d.replaces == [], key
    assert p.diff("a", olds, {**olds, "adopt": False}).changes is False  # a state from before `adopt`
    assert p.diff("a", olds, {**olds, "bucket": "b"}).replaces == ["bucket"]
    moved = p.diff("a", olds, {**olds, "endpoint": "http://y:1"})
    assert moved.changes and moved.replaces == []
    assert p.diff("a", olds, {**olds, "adopt": False, "endpoint": "HTTP://X:1/"}).changes is False


def existing_bucket(server, tag: str) -> str:
    """A bucket of ours made outside the stack, with a lifecycle rule and an object of its own."""
    bucket = server.bucket_name(tag)
    c = server.client()
    c.create_bucket(Bucket=bucket)
    other_rule = {"ID": "keep-logs", "Filter": {"Prefix": "logs/"}, "Status": "Enabled", "Expiration": {"Days": 90}}
    c.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": [other_rule]})
    c.put_object(Bucket=bucket, Key="already-here", Body=b"x")
    return bucket


def test_existing_bucket_of_ours_is_refused_unless_adopt_is_set(s3_server):
    bucket = existing_bucket(s3_server, "noadopt")
    with pytest.raises(S3Error) as failure:
        BucketProvider().create(bucket_props(s3_server, bucket))
    message = str(failure.value)
    assert message.startswith(f"bucket {bucket} already exists at {s3_server.endpoint} and is ours")
    assert "set weightCaches.s3.adopt: true" in message and "\n" not in message
    # Nothing was changed: no versioning, only the bucket's own rule.
    c = s3_server.client()
    assert c.get_bucket_versioning(Bucket=bucket).get("Status") is None
    assert [r["ID"] for r in c.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]] == ["keep-logs"]


def test_adopted_bucket_keeps_foreign_rules_and_is_only_forgotten_on_delete(s3_server):
    bucket = existing_bucket(s3_server, "adopt")
    p = BucketProvider()
    created = p.create(bucket_props(s3_server, bucket, adopt=True))
    assert created.outs["adopted"] is True
    c = s3_server.client()
    ids = {r["ID"] for r in c.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]}
    assert ids == {"keep-logs", s3bucket.LIFECYCLE_RULE_ID}
    assert [k for k, _ in versions(s3_server, bucket)] == ["already-here"]
    # Later edits cannot turn an adopted bucket into one that is emptied: the state keeps `adopted`.
    updated = p.update(bucket, created.outs, {**created.outs, "adopt": False, "forceDestroy": True}).outs
    assert updated["adopted"] is True
    p.delete(bucket, updated)
    assert [k for k, _ in versions(s3_server, bucket)] == ["already-here"]
    assert c.head_bucket(Bucket=bucket)["ResponseMetadata"]["HTTPStatusCode"] == 200


def test_a_created_bucket_is_not_adopted(s3_server):
    p, bucket = BucketProvider(), s3_server.bucket_name("fresh-adopt")
    outs = p.create(bucket_props(s3_server, bucket, adopt=True)).outs
    assert outs["adopted"] is False
    p.delete(bucket, outs)
    assert bucket not in [b["Name"] for b in s3_server.client().list_buckets()["Buckets"]]


def test_check_refuses_force_destroy_with_adopt():
    failures = BucketProvider().check({}, {"endpoint": "https://s3.example.cloud", "adopt": True, "forceDestroy": True}).failures
    assert [f.property for f in failures] == ["forceDestroy"]
    assert "not allowed with adopt" in failures[0].reason


def test_bucket_of_another_account_is_a_clear_error(s3_server):
    bucket = s3_server.foreign_bucket_name("foreign")
    s3_server.client(other=True).create_bucket(Bucket=bucket)
    for adopt in (False, True):
        with pytest.raises(S3Error, match=f"bucket {bucket} already exists .* belongs to another account"):
            BucketProvider().create(bucket_props(s3_server, bucket, adopt=adopt))


def test_bucket_public_through_its_acl_is_refused_before_anything_changes(s3_server):
    bucket = s3_server.bucket_name("public")
    c = s3_server.client()
    # ACLs on: the setting AWS buckets had before April 2023.
    c.create_bucket(Bucket=bucket, ObjectOwnership="ObjectWriter")
    c.put_bucket_acl(Bucket=bucket, ACL="public-read")
    with pytest.raises(S3Error, match=rf"^bucket {bucket} is public through its ACL \(READ to AllUsers\); nothing was changed"):
        BucketProvider().create(bucket_props(s3_server, bucket, adopt=True))
    assert c.get_bucket_versioning(Bucket=bucket).get("Status") is None


# --------------------------------------------------------------------------- ACLs and checksums on the wire


def recording_client(monkeypatch) -> list[tuple[str, dict, object]]:
    """Make the providers' clients record every request they send: (operation, headers, body)."""
    sent: list[tuple[str, dict, object]] = []
    make = s3client.client

    def recording(props, **options):
        c = make(props, **options)
        c.meta.events.register("before-send.s3", lambda request, event_name, **_: sent.append(
            (event_name.rsplit(".", 1)[-1], {k.lower(): v for k, v in request.headers.items()}, request.body)))
        return c

    # Each module that builds a client holds its own reference to the function.
    for module in (s3client, s3bucket, s3upload):
        monkeypatch.setattr(module, "client", recording)
    return sent


def test_no_acl_is_ever_written_and_ownership_is_enforced(s3_server, tree, monkeypatch):
    sent = recording_client(monkeypatch)
    p, bucket = BucketProvider(), s3_server.bucket_name("noacl")
    outs = p.create(bucket_props(s3_server, bucket)).outs
    outs = p.update(bucket, outs, {**outs, "noncurrentDays": 3}).outs
    UploadProvider().create(s3_server.props(bucket=bucket, source=str(tree), prefix="m", fingerprint="f"))
    operations = {op for op, _, _ in sent}
    assert "PutBucketOwnershipControls" in operations
    assert not {op for op in operations if "Acl" in op} - {"GetBucketAcl"}
    assert not [h for _, headers, _ in sent for h in headers if h == "x-amz-acl" or h.startswith("x-amz-grant-")]
    c = s3_server.client()
    if s3_server.enforces_ownership:
        # What AWS answers for any ACL write to a bucket it created since April 2023.
        with pytest.raises(ClientError, match="AccessControlListNotSupported"):
            c.put_bucket_acl(Bucket=bucket, ACL="private")
    assert outs["objectOwnership"] == "BucketOwnerEnforced"


def test_content_md5_replaces_botocore_crc32_where_a_checksum_is_required(s3_server, tree, monkeypatch):
    monkeypatch.setattr(s3upload, "MULTIPART_BYTES", 5 * 1024 * 1024)
    sent = recording_client(monkeypatch)
    p, bucket = BucketProvider(), s3_server.bucket_name("md5")
    outs = p.create(bucket_props(s3_server, bucket)).outs
    props = s3_server.props(bucket=bucket, source=str(tree), prefix="m")
    sync_tree(s3client.client(props), props)
    (tree / "bert" / "config.pbtxt").unlink()
    sync_tree(s3client.client(props), props)
    s3_server.client().put_object(Bucket=bucket, Key="other", Body=b"x")
    p.delete(bucket, {**outs, "forceDestroy": True})
    checked = {"DeleteObjects", "PutBucketLifecycleConfiguration", "PutBucketVersioning", "PutBucketOwnershipControls",
               "PutObject", "UploadPart"}
    assert checked <= {op for op, _, _ in sent}
    for op, headers, body in sent:
        assert not [h for h in headers if h.startswith("x-amz-checksum-") or h == "x-amz-sdk-checksum-algorithm"], op
        if op in checked:
            md5 = headers["content-md5"]
            md5 = md5.decode() if isinstance(md5, bytes) else md5
            assert len(base64.b64decode(md5)) == hashlib.md5().digest_size, op
            if isinstance(body, bytes):  # the XML bodies; objects and parts go as streams (SeaweedFS checks those)
                assert md5 == s3client.content_md5(body), op


def test_non_empty_bucket_is_not_deleted_without_force(s3_server):
    p, bucket = BucketProvider(), s3_server.bucket_name("full")
    outs = p.create(bucket_props(s3_server, bucket)).outs
    c = s3_server.client()
    for i in range(3):
        c.put_object(Bucket=bucket, Key=f"m/{i}", Body=b"w" * 10)
    c.put_object(Bucket=bucket, Key="m/0", Body=b"v2")
    before = versions(s3_server, bucket)
    assert len(before) == 4
    with pytest.raises(S3Error, match=r"bucket .* is not empty, so it was not deleted \(nothing was removed\).*forceDestroy"):
        p.delete(bucket, outs)
    assert versions(s3_server, bucket) == before
    # With forceDestroy every version goes, then the bucket.
    p.delete(bucket, {**outs, "forceDestroy": True})
    assert bucket not in [b["Name"] for b in c.list_buckets()["Buckets"]]


@pytest.mark.parametrize("change, message", [
    ({"secretAccessKey": "not-the-secret"}, r"refused the credentials \(SignatureDoesNotMatch.*s3AccessKeyId and s3SecretAccessKey"),
    ({"accessKeyId": "AKIANOSUCHKEY0000000"}, r"refused the credentials \(InvalidAccessKeyId"),
    ({"endpoint": "not a url"}, r"endpoint 'not a url' is not a URL such as https://s3.example.cloud"),
    ({"endpoint": "http://127.0.0.1:99999"}, r"endpoint 'http://127.0.0.1:99999' has an invalid port"),
    ({"endpoint": "http://127.0.0.1:1"}, r"cannot reach the S3 endpoint http://127.0.0.1:1"),
])
def test_bad_endpoint_or_credentials_give_one_clear_error(s3_server, change, message):
    with pytest.raises(S3Error, match=message) as info:
        BucketProvider().create({**bucket_props(s3_server, s3_server.bucket_name("bad")), **change})
    # The botocore exception is not chained in: the message is the whole story.
    assert info.value.__cause__ is None and (info.value.__context__ is None or info.value.__suppress_context__)


def test_check_refuses_a_malformed_endpoint_before_any_request():
    result = BucketProvider().check({}, {"endpoint": "ftp://s3.example", "noncurrentDays": 0})
    assert {f.property for f in result.failures} == {"endpoint", "noncurrentDays"}


# --------------------------------------------------------------------------- provider as Pulumi runs it


FRESH = """
import base64, json, sys
import dill
from pulumi.runtime._serialization import _deserialize

req = json.load(sys.stdin)
# As pulumi.dynamic.__main__.get_provider does it.
provider = _deserialize(lambda: dill.loads(base64.b64decode(req["provider"])))
created = provider.create(req["props"])
outs = dict(created.outs)
provider.delete(created.id, outs)
from inference_platform.weights.s3 import bucket
print(json.dumps({"id": created.id, "versioningStatus": outs["versioningStatus"], "class": type(provider).__name__,
                  "current": type(provider) is bucket.BucketProvider}))
"""

# What every stack deployed before 0.2 holds as its bucket's `__provider` (base64 of a dill pickle).
STATE_BUCKET_PROVIDER = "gASVLQAAAAAAAACME2NvbXBvbmVudHMuczNidWNrZXSUjA5CdWNrZXRQcm92aWRlcpSTlCmBlC4="

OLD_STATE = """
import base64, json, os, sys
import dill
from pulumi.runtime._serialization import _deserialize

# As `python -m pulumi.dynamic`, started in the project directory, finds modules.
assert sys.path[0] in ("", os.getcwd()), sys.path
loaded = [_deserialize(lambda s=s: dill.loads(base64.b64decode(s))) for s in json.load(sys.stdin)]
from inference_platform.weights.s3.bucket import BucketProvider
from inference_platform.weights.s3.upload import UploadProvider
print(json.dumps({
    "shim": sys.modules["components.s3bucket"].__file__,
    "loaded": [[type(p).__name__, type(p) in (BucketProvider, UploadProvider),
                [f.property for f in p.check({}, {"endpoint": "ftp://s3.example"}).failures]] for p in loaded],
}))
"""


def in_provider_process(code: str, request) -> dict:
    """Run `code` with `request` as JSON on stdin the way Pulumi runs a dynamic provider: a fresh
    interpreter in the project directory (no PYTHONPATH); its last line of output, as JSON."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-c", code], input=json.dumps(request), cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def pickled_by_reference(module: str, name: str) -> str:
    """base64 of a stateless instance of `module.name` pickled with protocol 4, by reference: what dill stores
    for our providers. A stand-in class is registered under that name, so `module` itself is never imported."""
    stand_in = type(name, (), {"__module__": module})
    fake = types.ModuleType(module)
    setattr(fake, name, stand_in)
    with mock.patch.dict(sys.modules, {module: fake}):
        return base64.b64encode(pickle.dumps(stand_in(), protocol=4)).decode()


def test_providers_pickled_in_states_written_before_0_2_load_as_the_current_classes():
    """States name `components.s3bucket.*Provider`; the engine loads that provider to refresh and delete."""
    assert pickled_by_reference("components.s3bucket", "BucketProvider") == STATE_BUCKET_PROVIDER
    upload = pickled_by_reference("components.s3bucket", "UploadProvider")
    assert b"components.s3bucket" in base64.b64decode(upload) and b"UploadProvider" in base64.b64decode(upload)
    result = in_provider_process(OLD_STATE, [STATE_BUCKET_PROVIDER, upload])
    assert result["shim"] == str(ROOT / "components" / "s3bucket.py")
    assert result["loaded"] == [["BucketProvider", True, ["endpoint"]], ["UploadProvider", True, ["endpoint"]]]


def test_serialised_provider_from_the_plan_creates_and_deletes_in_a_fresh_interpreter(s3_server):
    r = stack_plan("acme-prod").get(BUCKET_TYPE, "acme-prod-weights-bucket")
    serialised = r.inputs["__provider"]
    assert isinstance(serialised, str) and serialised != "[secret]"
    # Nothing of the credentials is inside the serialised provider; the class is named by its module.
    assert b"Placeholder" not in base64.b64decode(serialised)
    assert b"inference_platform.weights.s3.bucket" in base64.b64decode(serialised)
    bucket = s3_server.bucket_name("fresh")
    props = {**r.inputs, **bucket_props(s3_server, bucket), "__provider": serialised}
    result = in_provider_process(FRESH, {"provider": serialised, "props": props})
    assert result == {"id": bucket, "versioningStatus": "Enabled", "class": "BucketProvider", "current": True}
    assert bucket not in [b["Name"] for b in s3_server.client().list_buckets()["Buckets"]]


# --------------------------------------------------------------------------- upload


WRITES = ("PutObject", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload")


def counting_client(props):
    """The provider's own client, with a hook counting the write requests it sends (`before-send`: small objects'
    lean PUTs emit it too, small_put.py)."""
    client = s3client.client(props)
    calls: Counter = Counter()
    for op in WRITES + ("DeleteObjects",):
        client.meta.events.register(f"before-send.s3.{op}", lambda op=op, **_: calls.update([op]))
    return client, calls


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "repo"
    for model in ("resnet", "bert"):
        (root / model / "1").mkdir(parents=True)
        (root / model / "config.pbtxt").write_text(f'name: "{model}"\n')
        (root / model / "1" / "model.onnx").write_bytes(os.urandom(200_000))
    (root / "bert" / "1" / "big.bin").write_bytes(os.urandom(12 * 1024 * 1024))
    return root


def test_upload_sends_changed_files_only_and_nothing_when_unchanged(s3_server, tree, monkeypatch):
    monkeypatch.setattr(s3upload, "MULTIPART_BYTES", 5 * 1024 * 1024)
    bucket = s3_server.bucket_name("up")
    BucketProvider().create(bucket_props(s3_server, bucket))
    props = s3_server.props(bucket=bucket, source=str(tree), prefix="models/v1")

    client, calls = counting_client(props)
    first = sync_tree(client, props)
    assert first["fileCount"] == 5 and first["uploadedFiles"] == 5
    assert calls["PutObject"] == 6  # four small files, the manifest marking them pending, the complete manifest
    assert calls["CreateMultipartUpload"] == 1 and calls["UploadPart"] == 3  # 12 MiB in 5 MiB parts
    head = s3_server.client().head_object(Bucket=bucket, Key="models/v1/bert/1/big.bin")
    assert head["ContentLength"] == 12 * 1024 * 1024 and len(head["Metadata"]["sha256"]) == 64

    client, calls = counting_client(props)
    again = sync_tree(client, props)
    assert sum(calls[op] for op in WRITES) == 0 and again["uploadedFiles"] == 0
    assert again["contentSha256"] == first["contentSha256"]

    (tree / "resnet" / "config.pbtxt").write_text('name: "resnet"\nmax_batch_size: 8\n')
    (tree / "bert" / "config.pbtxt").unlink()
    client, calls = counting_client(props)
    changed = sync_tree(client, props)
    assert changed["uploadedFiles"] == 1 and changed["deletedFiles"] == 1
    assert calls["PutObject"] == 3 and calls["UploadPart"] == 0  # the changed file and the manifest, twice
    keys = {o["Key"] for o in s3_server.client().list_objects_v2(Bucket=bucket, Prefix="models/v1/")["Contents"]}
    assert "models/v1/bert/config.pbtxt" not in keys and "models/v1/resnet/config.pbtxt" in keys


def test_upload_provider_second_run_adds_no_object_version(s3_server, tree):
    bucket = s3_server.bucket_name("upv")
    BucketProvider().create(bucket_props(s3_server, bucket))
    props = s3_server.props(bucket=bucket, source=str(tree), prefix="m", fingerprint=s3tree.fingerprint(str(tree)))
    p = UploadProvider()
    created = p.create(props)
    assert created.id == f"{bucket}/m" and created.outs["uploadedFiles"] == 5
    before = versions(s3_server, bucket)
    assert p.diff(created.id, created.outs, props).changes is False
    updated = p.update(created.id, created.outs, {**props, "fingerprint": "touched"})
    # Server side: no new version of any object, so nothing was written.
    assert versions(s3_server, bucket) == before and updated.outs["uploadedFiles"] == 0


def test_refresh_finds_objects_removed_behind_our_back_and_the_update_restores_them(s3_server, tree):
    bucket = s3_server.bucket_name("drift")
    BucketProvider().create(bucket_props(s3_server, bucket))
    props = s3_server.props(bucket=bucket, source=str(tree), prefix="m", fingerprint=s3tree.fingerprint(str(tree)))
    p = UploadProvider()
    created = p.create(props)
    assert p.read(created.id, created.outs).inputs is None  # in sync: inputs unchanged
    s3_server.client().delete_object(Bucket=bucket, Key="m/resnet/config.pbtxt")
    refreshed = p.read(created.id, created.outs)
    assert refreshed.inputs["fingerprint"] == "drifted"
    assert p.diff(created.id, refreshed.outs, props).changes is True
    repaired = p.update(created.id, refreshed.outs, props)
    assert repaired.outs["uploadedFiles"] == 1
    assert s3_server.client().head_object(Bucket=bucket, Key="m/resnet/config.pbtxt")["ContentLength"] > 0


def test_upload_of_a_missing_directory_is_a_clear_error(s3_server, tmp_path):
    missing = str(tmp_path / "nope")
    props = s3_server.props(bucket=s3_server.bucket_name("miss"), source=missing, prefix="m")
    with pytest.raises(S3Error, match="weight upload source .*nope' is not a directory"):
        UploadProvider().create(props)
    failures = UploadProvider().check({}, props).failures
    assert [f.property for f in failures] == ["source"]
    assert s3tree.fingerprint(missing) == "missing"


@pytest.mark.parametrize("head, held", [
    ({"ContentLength": 3, "Metadata": {"sha256": "a" * 64}, "ETag": '"0"'}, True),
    ({"ContentLength": 3, "Metadata": {"sha256": "b" * 64}, "ETag": f'"{"c" * 32}"'}, False),  # the recorded sha256 decides
    ({"ContentLength": 4, "Metadata": {"sha256": "a" * 64}}, False),
    ({"ContentLength": 3, "Metadata": {}, "ETag": f'"{"c" * 32}"'}, True),  # no sha256: a plain-MD5 ETag
    ({"ContentLength": 3, "Metadata": {}, "ETag": f'"{"d" * 32}"'}, False),
    ({"ContentLength": 3, "Metadata": {}, "ETag": f'"{"c" * 32}-2"'}, False),  # multipart: not an MD5 of the content
    ({"ContentLength": 3, "Metadata": {}, "ETag": f'"{"c" * 32}"', "ServerSideEncryption": "aws:kms"}, False),
], ids=["sha256", "other-sha256", "other-size", "md5-etag", "other-md5", "multipart-etag", "kms-etag"])
def test_an_object_holds_the_content_its_sha256_or_plain_md5_etag_shows(head, held):
    assert s3manifest.holds(head, {"sha256": "a" * 64, "size": 3, "md5": "c" * 32}) is held


def test_a_file_name_that_is_not_utf8_fails_the_listing(tmp_path):
    (tmp_path / "ok.bin").write_bytes(b"x")
    with open(os.fsencode(tmp_path) + b"/model-\xff.bin", "wb") as f:
        f.write(b"x")
    with pytest.raises(s3tree.SourceError, match=r"model-\\xff.bin is not UTF-8, so it cannot be an S3 key"):
        s3tree.local_files(str(tmp_path))


# --------------------------------------------------------------------------- generated config variants


def planned_upload(tmp_path, server, bucket: str) -> tuple[dict, dict]:
    """A stack's upload with tuning presets as the plan declares it, pointed at `server`; and its generated files."""
    from tests.live.test_presets import ONNX, SECRETS, TENSORRT, repository, stack_with_upload

    root = repository(tmp_path / "repo", {"resnet50": ONNX, "bert_trt": TENSORRT})
    plan = render_raw(stack_with_upload(root, ["latency", "throughput"]), secret_keys=SECRETS)
    (upload,) = plan.of_type("pulumi-python:dynamic/s3:Upload")
    inputs = {k: v for k, v in upload.inputs.items() if k != "__provider"}
    return {**inputs, **server.props(bucket=bucket)}, upload.inputs["generated"]


def test_a_planned_upload_with_presets_puts_their_config_variants_beside_the_models(s3_server, tmp_path):
    from inference_platform.serving.model_config import parse_model_config

    bucket = s3_server.bucket_name("presets")
    BucketProvider().create(bucket_props(s3_server, bucket))
    props, generated = planned_upload(tmp_path, s3_server, bucket)
    p = UploadProvider()
    assert p.check({}, props).failures == []
    created = p.create(props)
    assert created.outs["fileCount"] == 4 + 4 and created.outs["uploadedFiles"] == 8
    c = s3_server.client()
    key = "svc/v1/resnet50/configs/latency.pbtxt"
    text = c.get_object(Bucket=bucket, Key=key)["Body"].read().decode()
    assert text == generated["resnet50/configs/latency.pbtxt"]
    variant = parse_model_config(text, key)
    assert (variant.name, variant.instance_group[0].count) == ("resnet50", 2) and variant.HasField("dynamic_batching")
    assert c.head_object(Bucket=bucket, Key=key)["Metadata"]["sha256"] == hashlib.sha256(text.encode()).hexdigest()
    assert p.read(created.id, created.outs).inputs is None  # refresh: in sync

    # An unchanged plan writes nothing; a preset dropped and one changed: one PUT and one deletion.
    client, calls = counting_client(props)
    assert sync_tree(client, props)["uploadedFiles"] == 0 and sum(calls[op] for op in WRITES) == 0
    changed = {rel: text for rel, text in generated.items() if "throughput" not in rel}
    changed["bert_trt/configs/latency.pbtxt"] = changed["bert_trt/configs/latency.pbtxt"].replace("count: 2", "count: 3")
    news = {**props, "generated": changed}
    diff = p.diff(created.id, created.outs, news)
    assert diff.changes is True and diff.replaces == []
    client, calls = counting_client(news)
    out = sync_tree(client, news)
    assert (out["uploadedFiles"], out["deletedFiles"], calls["DeleteObjects"]) == (1, 2, 1)
    keys = {o["Key"] for o in c.list_objects_v2(Bucket=bucket, Prefix="svc/v1/")["Contents"]}
    assert {k for k in keys if "/configs/" in k} == {f"svc/v1/{rel}" for rel in changed}
    assert c.get_object(Bucket=bucket, Key="svc/v1/bert_trt/configs/latency.pbtxt")["Body"].read().decode() == \
        changed["bert_trt/configs/latency.pbtxt"]


def test_an_upload_state_without_generated_files_is_unchanged_by_the_new_input(monkeypatch):
    olds = {k: f"v-{k}" for k in s3upload.UPLOAD_INPUTS if k != "generated"}
    # Unchanged inputs ask the bucket whether it still holds the manifest's objects: here it does.
    monkeypatch.setattr(s3upload, "client", lambda props, **_: None)
    monkeypatch.setattr(s3upload, "bucket_differs", lambda s3, props: False)
    p = UploadProvider()
    assert p.diff("id", olds, dict(olds)).changes is False
    assert p.diff("id", olds, {**olds, "generated": {}}).changes is False
    assert p.diff("id", olds, {**olds, "generated": {"m/configs/a.pbtxt": 'name: "m"\n'}}).changes is True


@pytest.mark.parametrize("generated, message", [
    ({"resnet/config.pbtxt": 'name: "resnet"\n'}, r"generated file 'resnet/config.pbtxt' is not <model>/configs/<name>.pbtxt"),
    ({"../configs/x.pbtxt": 'name: "x"\n'}, r"generated file '../configs/x.pbtxt' is not <model>/configs/<name>.pbtxt"),
    ({"gpt/configs/latency.pbtxt": 'name: "gpt"\n'}, r"generated gpt/configs/latency.pbtxt is a variant of gpt/config.pbtxt, "
                                                     r"which the source does not hold"),
    ({"bert/configs/latency.pbtxt": 'name: "bert"\ninstance_group [ { kind: KIND_GPUS } ]\n'},
     r"generated bert/configs/latency.pbtxt: invalid Triton model config: 2:"),
    ({"bert/configs/own.pbtxt": 'name: "bert"\n'}, r"bert/configs/own.pbtxt is both a file of the source and generated"),
], ids=["not-a-variant", "outside", "no-such-model", "unparsable", "source-holds-it"])
def test_generated_files_that_do_not_fit_the_source_fail_before_the_bucket_changes(s3_server, tree, generated, message):
    bucket = s3_server.bucket_name("gen-bad")
    BucketProvider().create(bucket_props(s3_server, bucket))
    (tree / "bert" / "configs").mkdir()
    (tree / "bert" / "configs" / "own.pbtxt").write_text('name: "bert"\n')
    props = s3_server.props(bucket=bucket, source=str(tree), prefix="m")
    created = UploadProvider().create(props)
    before = versions(s3_server, bucket)
    news = {**props, "generated": generated}
    with pytest.raises(s3tree.SourceError, match=f"^weight upload: {message}.*; nothing in the bucket was changed$") as info:
        UploadProvider().update(created.id, created.outs, news)
    assert "\n" not in str(info.value)
    assert versions(s3_server, bucket) == before


def test_check_refuses_generated_files_that_are_not_config_variants():
    p = UploadProvider()
    news = {"endpoint": "https://s3.example.cloud", "generated": {"m/configs/a.pbtxt": "x", "m/weights.bin": "y"}}
    assert [(f.property, f.reason) for f in p.check({}, news).failures] == [
        ("generated", "generated file 'm/weights.bin' is not <model>/configs/<name>.pbtxt")]
    assert [f.property for f in p.check({}, {**news, "generated": {"m/configs/a.pbtxt": 1}}).failures] == ["generated"]
