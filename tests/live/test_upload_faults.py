"""Upload faults against the loopback S3 servers (moto, SeaweedFS): the weight upload never loses data.

Each scenario starts from a model repository uploaded in full, breaks something, and
checks that nothing the source still holds was lost, that the manifest in the bucket
claims only content the bucket holds, and that a re-run converges to exactly the source.
The server is reached through a relay (tests/support/faultproxy.py) that can die mid-request and
come back; the checks read the server directly.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from inference_platform.weights.s3 import client as s3client
from inference_platform.weights.s3 import manifest as s3manifest
from inference_platform.weights.s3 import tree as s3tree
from inference_platform.weights.s3 import upload as s3upload
from inference_platform.weights.s3.bucket import BucketProvider
from inference_platform.weights.s3.client import S3Error
from inference_platform.weights.s3.tree import SourceError
from inference_platform.weights.s3.upload import UploadProvider, sync_tree
from tests.support.faultproxy import FaultProxy
from tests.support.provider_process import file_modes_apply, run_provider

if TYPE_CHECKING:
    from tests.support.s3server import S3Server

pytest_plugins = ["tests.support.s3server"]

PREFIX = "m"
PART = 5 * 1024 * 1024
BIG = "bert/1/big.bin"
BIG_BYTES = PART + 1024 * 1024  # two parts


@pytest.fixture(autouse=True)
def small_parts(monkeypatch):
    # Multipart from 5 MiB (the smallest part S3 allows), as from 64 MiB in production.
    monkeypatch.setattr(s3upload, "MULTIPART_BYTES", PART)


def first_version() -> dict[str, bytes]:
    return {
        "resnet/config.pbtxt": b'name: "resnet"\n',
        "resnet/1/model.onnx": os.urandom(200_000),
        "bert/config.pbtxt": b'name: "bert"\n',
        "bert/vocab.txt": b"[PAD]\n[UNK]\n" * 100,
        "bert/1/model.onnx": os.urandom(200_000),
        BIG: os.urandom(BIG_BYTES),
    }


def write_tree(root: Path, files: dict[str, bytes]) -> None:
    for rel, body in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(body)


def second_version(root: Path) -> None:
    """A change that sends small files, a multipart file and a new file, and deletes one."""
    (root / "bert/config.pbtxt").write_bytes(b'name: "bert"\nmax_batch_size: 8\n')
    (root / BIG).write_bytes(os.urandom(BIG_BYTES))
    (root / "resnet/1/model.onnx").unlink()
    write_tree(root, {"resnet/2/model.onnx": os.urandom(200_000)})


@dataclasses.dataclass
class Deployed:
    """An upload as the engine left it after the first `pulumi up`, through a relay that can fail."""

    direct: S3Server  # checks go here, past the relay
    via: S3Server
    proxy: FaultProxy
    bucket: str
    root: Path
    outs: dict  # the stored state
    before: dict[str, bytes]  # what the bucket held after the first `up`

    @property
    def id(self) -> str:
        return f"{self.bucket}/{PREFIX}"

    def inputs(self) -> dict:
        """The upload's inputs as the program declares them now."""
        return self.via.props(bucket=self.bucket, source=str(self.root), prefix=PREFIX,
                              fingerprint=s3tree.fingerprint(str(self.root)))

    def bucket_props(self) -> dict:
        return self.via.props(bucket=self.bucket, versioning=True, noncurrentDays=7, forceDestroy=False)


@pytest.fixture
def deployed(s3_server, tmp_path):
    proxy = FaultProxy(int(s3_server.endpoint.rsplit(":", 1)[1]))
    root = tmp_path / "repo"
    write_tree(root, first_version())
    d = Deployed(s3_server, dataclasses.replace(s3_server, endpoint=proxy.endpoint), proxy,
                 s3_server.bucket_name("faults"), root, {}, {})
    BucketProvider().create(d.bucket_props())
    d.outs = UploadProvider().create(d.inputs()).outs
    d.before = objects(d)
    assert d.before == local(root)
    yield d
    proxy.close()


# --------------------------------------------------------------------------- what the bucket holds


def sha(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def local(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def objects(d: Deployed) -> dict[str, bytes]:
    c = d.direct.client()
    pages = c.get_paginator("list_objects_v2").paginate(Bucket=d.bucket, Prefix=f"{PREFIX}/")
    keys = [o["Key"] for page in pages for o in page.get("Contents", [])]
    return {k.removeprefix(f"{PREFIX}/"): c.get_object(Bucket=d.bucket, Key=k)["Body"].read() for k in keys}


def manifest(d: Deployed) -> dict:
    body = d.direct.client().get_object(Bucket=d.bucket, Key=s3manifest.manifest_key(PREFIX))["Body"].read()
    return json.loads(body)


def versions(d: Deployed) -> list[tuple[str, str]]:
    """Every object version and delete marker: any write or delete adds one."""
    page = d.direct.client().list_object_versions(Bucket=d.bucket)
    return sorted((v["Key"], v["VersionId"]) for v in page.get("Versions", []) + page.get("DeleteMarkers", []))


def tree_sha(files: dict[str, bytes]) -> str:
    return hashlib.sha256(json.dumps({rel: sha(b) for rel, b in files.items()}, sort_keys=True).encode()).hexdigest()


def assert_objects_carry_their_sha256(d: Deployed, held: dict[str, bytes]) -> None:
    """No object's recorded sha256 is another content's (objects put by others may record none)."""
    c = d.direct.client()
    for rel, body in held.items():
        recorded = c.head_object(Bucket=d.bucket, Key=f"{PREFIX}/{rel}")["Metadata"].get("sha256")
        assert recorded in (None, sha(body)), rel


def assert_mirrors_source(d: Deployed, outs: dict) -> None:
    """The prefix holds exactly the source, each object's recorded sha256 is its content's, the manifest is complete."""
    held, source = objects(d), local(d.root)
    assert held == source
    assert_objects_carry_their_sha256(d, held)
    record = manifest(d)
    assert "pending" not in record
    assert {rel: e["sha256"] for rel, e in record["files"].items()} == {rel: sha(b) for rel, b in source.items()}
    assert outs["fileCount"] == len(source) and outs["contentSha256"] == tree_sha(source)
    assert UploadProvider().read(d.id, {**d.inputs(), **outs}).inputs is None  # a refresh finds it in sync


def assert_claims_only_what_is_held(d: Deployed) -> None:
    """Every manifest entry is the sha256 of what the bucket really holds at that key."""
    held = objects(d)
    for rel, entry in manifest(d)["files"].items():
        assert rel in held and sha(held[rel]) == entry["sha256"], rel


def assert_nothing_deleted(d: Deployed) -> dict[str, bytes]:
    """Every object of the first upload is still there, none claiming another content; returns what is held."""
    held = objects(d)
    assert set(d.before) <= set(held)
    assert_objects_carry_their_sha256(d, held)
    return held


def assert_one_line(message: str) -> None:
    assert message and "\n" not in message and "Traceback" not in message


# --------------------------------------------------------------------------- the server dies mid-upload


# Request bytes let through: the small files come first (one of 200 kB), then the parts.
@pytest.mark.parametrize("cut", [50_000, 3 * 1024 * 1024], ids=["in-a-small-file", "in-a-multipart-part"])
@pytest.mark.parametrize("refresh", [False, True], ids=["then-up", "then-refresh-then-up"])
def test_server_dies_mid_upload_then_comes_back(deployed, cut, refresh):
    d = deployed
    second_version(d.root)
    news = d.inputs()
    d.proxy.die_after(cut)
    with pytest.raises(S3Error) as failure:
        UploadProvider().update(d.id, d.outs, news)
    message = str(failure.value)
    assert_one_line(message)
    assert f"{d.bucket}/{PREFIX}/" in message and "no object was deleted" in message
    assert d.proxy.deaths == 1
    held, source = assert_nothing_deleted(d), local(d.root)
    assert all(held[rel] in (body, source.get(rel)) for rel, body in d.before.items())  # the old content or the new
    assert_claims_only_what_is_held(d)

    d.proxy.restart()
    olds = d.outs  # the engine keeps the state of the last successful update
    if refresh:
        refreshed = UploadProvider().read(d.id, d.outs)
        assert refreshed.inputs["fingerprint"] == "drifted" and "did not finish" in refreshed.outs["drift"]
        # The refreshed state counts only what is verified in the bucket.
        claimed = manifest(d)["files"]
        assert refreshed.outs["fileCount"] == len(claimed) < len(local(d.root))
        olds = refreshed.outs
    assert UploadProvider().diff(d.id, olds, news).changes
    assert_mirrors_source(d, UploadProvider().update(d.id, olds, news).outs)


# --------------------------------------------------------------------------- unreadable source


@pytest.mark.skipif(not file_modes_apply(), reason="needs a process that file modes apply to (setpriv, or not root)")
@pytest.mark.parametrize("locked", ["bert/1", ".", "bert/1/model.onnx"], ids=["subdirectory", "root", "file"])
def test_unreadable_source_fails_before_the_bucket_changes(deployed, locked):
    d = deployed
    (d.root / "resnet/config.pbtxt").write_bytes(b'name: "resnet"\nmax_batch_size: 4\n')
    (d.root / "bert/vocab.txt").unlink()  # would be deleted remotely if the listing were trusted
    news, before = d.inputs(), versions(d)
    path = d.root / locked
    mode = path.stat().st_mode
    path.chmod(0)
    try:
        failed = run_provider("update", d.id, d.outs, news)
    finally:
        path.chmod(mode)
    assert failed["returncode"] == 1 and failed["type"] == "SourceError"
    assert_one_line(failed["error"])
    assert str(path.resolve()) in failed["error"] and "(Permission denied)" in failed["error"]
    assert "nothing in the bucket was changed" in failed["error"]
    assert versions(d) == before  # not one object written or deleted
    # With the permissions back, the state the engine kept (the first upload's) is updated.
    assert_mirrors_source(d, UploadProvider().update(d.id, d.outs, d.inputs()).outs)


# --------------------------------------------------------------------------- a file rewritten during upload


def hooked(props: dict, operation: str, hook) -> tuple[object, Counter]:
    """The provider's own client, calling `hook(url)` just before each `operation` request is sent, counting the
    requests sent (`before-send`: small objects' lean PUTs emit it too, small_put.py)."""
    client = s3client.client(props)
    calls: Counter = Counter()
    client.meta.events.register(f"before-send.s3.{operation}", lambda request, **_: hook(request.url))
    for op in ("PutObject", "CreateMultipartUpload", "CompleteMultipartUpload", "AbortMultipartUpload", "DeleteObjects"):
        client.meta.events.register(f"before-send.s3.{op}", lambda op=op, **_: calls.update([op]))
    return client, calls


def test_small_file_rewritten_while_it_is_sent_is_sent_again(deployed):
    d = deployed
    target = d.root / "bert/config.pbtxt"
    target.write_bytes(b'name: "bert"\nmax_batch_size: 2\n')
    rewrites = []

    def rewrite(url: str) -> None:
        # The bytes are already read and on their way; the file changes under them.
        if url.endswith(f"/{PREFIX}/bert/config.pbtxt") and not rewrites:
            rewrites.append(url)
            target.write_bytes(b'name: "bert"\nmax_batch_size: 16\n')

    client, calls = hooked(d.via.props(), "PutObject", rewrite)
    outs = sync_tree(client, d.inputs())
    assert rewrites and calls["PutObject"] == 4  # the file twice, the manifest twice (pending, complete)
    assert objects(d)["bert/config.pbtxt"] == b'name: "bert"\nmax_batch_size: 16\n'
    assert_mirrors_source(d, outs)


def test_multipart_file_rewritten_after_it_was_hashed_is_never_completed_with_the_wrong_hash(deployed):
    d = deployed
    (d.root / BIG).write_bytes(os.urandom(BIG_BYTES))
    rewrites = []

    def rewrite(url: str) -> None:
        # Hashed already, declared with that hash, not read yet: the parts will carry other bytes.
        if f"/{PREFIX}/{BIG}?uploads" in url and not rewrites:
            rewrites.append(url)
            (d.root / BIG).write_bytes(os.urandom(BIG_BYTES))

    client, calls = hooked(d.via.props(), "CreateMultipartUpload", rewrite)
    outs = sync_tree(client, d.inputs())
    assert rewrites
    assert (calls["CreateMultipartUpload"], calls["AbortMultipartUpload"], calls["CompleteMultipartUpload"]) == (2, 1, 1)
    assert [k for k, _ in versions(d)].count(f"{PREFIX}/{BIG}") == 2  # the first upload's and the final one
    assert_mirrors_source(d, outs)


def test_file_that_keeps_changing_fails_the_update_naming_it(deployed):
    d = deployed
    target = d.root / "resnet/config.pbtxt"
    (d.root / "bert/vocab.txt").unlink()
    count = Counter()

    def rewrite(url: str) -> None:
        if url.endswith(f"/{PREFIX}/resnet/config.pbtxt"):
            count.update(["rewrites"])
            target.write_bytes(f'name: "resnet"\nmax_batch_size: {count["rewrites"]}\n'.encode())

    target.write_bytes(b'name: "resnet"\nmax_batch_size: 2\n')
    client, _ = hooked(d.via.props(), "PutObject", rewrite)
    with pytest.raises(SourceError) as failure:
        sync_tree(client, d.inputs())
    message = str(failure.value)
    assert_one_line(message)
    assert f"{target} changed while it was uploaded, twice" in message and "no object was deleted" in message
    assert count["rewrites"] == 2
    assert_nothing_deleted(d)
    assert_claims_only_what_is_held(d)
    assert "resnet/config.pbtxt" in manifest(d)["pending"]
    assert_mirrors_source(d, UploadProvider().update(d.id, d.outs, d.inputs()).outs)


# --------------------------------------------------------------------------- the server answers with an error


class _Body:
    def __init__(self, body: bytes):
        self.body = body

    def stream(self, **_):
        yield self.body


def answering(props: dict, status: int, code: str, refuse) -> tuple[object, Counter, list]:
    """A client whose PutObject requests below the prefix get `status` with the S3 error `code` instead of the
    server's answer while `refuse(rel, attempt)` says so; the requests per relative path, and their headers."""
    from botocore.awsrequest import AWSResponse

    client, sent, attempts = s3client.client(props), [], Counter()
    error = f"<Error><Code>{code}</Code><Message>injected</Message></Error>".encode()

    def answer(request, **_):
        if f"/{PREFIX}/" not in request.url:
            return None  # the manifest
        rel = request.url.split(f"/{PREFIX}/", 1)[1]
        attempts.update([rel])
        sent.append((rel, dict(request.headers)))
        if refuse(rel, attempts[rel]):
            return AWSResponse(request.url, status, {"Content-Type": "application/xml"}, _Body(error))
        return None
    client.meta.events.register("before-send.s3.PutObject", answer)
    return client, attempts, sent


@pytest.mark.parametrize(("status", "code"), [(500, "InternalError"), (503, "SlowDown")])
def test_a_server_error_on_a_small_file_is_retried_and_a_lasting_one_fails_without_claiming_it(deployed, status, code):
    d = deployed
    second_version(d.root)
    small = "bert/config.pbtxt"
    # Each small file's first request (the lean PUT) is refused once: sent again, the update completes.
    client, attempts, sent = answering(d.via.props(), status, code, lambda _, attempt: attempt == 1)
    assert_mirrors_source(d, sync_tree(client, d.inputs()))
    assert attempts[small] == 2 and "amz-sdk-request" not in next(h for rel, h in sent if rel == small)

    # Refused every time: the update fails in one line, the file is pending, nothing is deleted.
    (d.root / small).write_bytes(b'name: "bert"\nmax_batch_size: 4\n')
    (d.root / "bert/vocab.txt").unlink()
    client, attempts, _ = answering(d.via.props(), status, code, lambda rel, _: rel == small)
    with pytest.raises(S3Error) as failure:
        sync_tree(client, d.inputs())
    assert_one_line(str(failure.value))
    assert f"{d.bucket}/{PREFIX}/{small}" in str(failure.value) and code in str(failure.value)
    assert attempts[small] > 2  # the lean PUT, then botocore's attempts
    assert "bert/vocab.txt" in objects(d) and small in manifest(d)["pending"]
    assert_claims_only_what_is_held(d)
    assert_mirrors_source(d, sync_tree(s3client.client(d.via.props()), d.inputs()))


# --------------------------------------------------------------------------- changes behind our back


def test_objects_deleted_or_replaced_behind_our_back_are_drift_and_restored(deployed):
    d = deployed
    c = d.direct.client()
    for rel in ("resnet/config.pbtxt", BIG):
        c.delete_object(Bucket=d.bucket, Key=f"{PREFIX}/{rel}")
    c.put_object(Bucket=d.bucket, Key=f"{PREFIX}/bert/vocab.txt", Body=b"someone else's vocabulary")
    # Same size, other content, and a sha256 recorded for that other content.
    other = os.urandom(200_000)
    c.put_object(Bucket=d.bucket, Key=f"{PREFIX}/resnet/1/model.onnx", Body=other, Metadata={"sha256": sha(other)})
    # Same content without our metadata: its plain-MD5 ETag shows it is right.
    c.put_object(Bucket=d.bucket, Key=f"{PREFIX}/bert/config.pbtxt", Body=d.before["bert/config.pbtxt"])
    props = d.inputs()

    # A normal `up` sees from one listing that objects are gone or rewritten; refresh verifies the content.
    assert UploadProvider().diff(d.id, d.outs, props).changes is True
    refreshed = UploadProvider().read(d.id, d.outs)
    assert refreshed.inputs["fingerprint"] == "drifted"
    assert refreshed.outs["drift"] == ("2 missing (bert/1/big.bin, resnet/config.pbtxt); "
                                       "2 with other content (bert/vocab.txt, resnet/1/model.onnx)")
    verified = {rel: d.before[rel] for rel in ("bert/1/model.onnx", "bert/config.pbtxt")}
    assert refreshed.outs["fileCount"] == 2 and refreshed.outs["contentSha256"] == tree_sha(verified)

    assert UploadProvider().diff(d.id, refreshed.outs, props).changes
    repaired = UploadProvider().update(d.id, refreshed.outs, props).outs
    assert repaired["uploadedFiles"] == 4
    assert_mirrors_source(d, repaired)


def test_bucket_deleted_behind_our_back_is_drift_then_recreated_and_filled(deployed):
    d = deployed
    BucketProvider().delete(d.bucket, {**d.bucket_props(), "forceDestroy": True})
    refreshed = UploadProvider().read(d.id, d.outs)
    assert refreshed.outs["drift"] == f"bucket {d.bucket} does not exist"
    assert refreshed.outs["fileCount"] == 0 and refreshed.inputs["fingerprint"] == "drifted"
    assert BucketProvider().read(d.bucket, d.bucket_props()).id is None

    # Before the bucket is back: one clear line, no crash.
    with pytest.raises(S3Error, match=f"^bucket {d.bucket} does not exist at .*`pulumi refresh` then `pulumi up`") as failure:
        UploadProvider().update(d.id, refreshed.outs, d.inputs())
    assert_one_line(str(failure.value))

    # The engine recreates the bucket first (the upload depends on it), then updates the upload.
    BucketProvider().create(d.bucket_props())
    assert_mirrors_source(d, UploadProvider().update(d.id, refreshed.outs, d.inputs()).outs)


# --------------------------------------------------------------------------- what the listing accepts


@pytest.mark.parametrize("make, message", [
    (lambda root: os.mkfifo(root / "bert/pipe"), r"bert/pipe is a FIFO; only regular files are uploaded"),
    (lambda root: (root / "bert/shared").symlink_to(root / "resnet"), r"bert/shared is a symlink to a directory"),
    (lambda root: (root / "bert/gone").symlink_to(root / "nowhere"), r"cannot read .*bert/gone \(No such file or directory\)"),
], ids=["fifo", "directory-symlink", "dangling-symlink"])
def test_what_cannot_be_uploaded_fails_before_the_bucket_changes(deployed, make, message):
    d = deployed
    (d.root / "bert/vocab.txt").unlink()
    make(d.root)
    before = versions(d)
    assert s3tree.fingerprint(str(d.root)) == "unreadable"
    with pytest.raises(SourceError, match=message + ".*; nothing in the bucket was changed$") as failure:
        UploadProvider().update(d.id, d.outs, d.inputs())
    assert_one_line(str(failure.value))
    assert versions(d) == before


def test_symlink_to_a_file_outside_the_source_uploads_its_content(deployed, tmp_path):
    d = deployed
    blob = tmp_path / "blobs" / "3f2a"
    blob.parent.mkdir()
    blob.write_bytes(b"weights kept in a cache next to the repository")
    (d.root / "bert/1/linked.bin").symlink_to(blob)
    outs = UploadProvider().update(d.id, d.outs, d.inputs()).outs
    assert objects(d)["bert/1/linked.bin"] == blob.read_bytes()
    assert_mirrors_source(d, outs)


def test_emptied_source_deletes_nothing(deployed):
    d = deployed
    for path in d.root.rglob("*"):
        if path.is_file():
            path.unlink()
    before = versions(d)
    with pytest.raises(SourceError, match=r"is empty, but .* holds 6 uploaded files; refusing to delete them all"):
        UploadProvider().update(d.id, d.outs, d.inputs())
    assert versions(d) == before


# --------------------------------------------------------------------------- generated config variants


def test_server_dies_while_config_variants_are_sent_then_comes_back(deployed):
    from inference_platform.settings.tuning import BatchingPreset
    from inference_platform.tuning.presets import upload_variants

    d = deployed
    second_version(d.root)
    generated = upload_variants(str(d.root), {"pinned": BatchingPreset(dynamic_batching=False, instance_count=2)})
    assert sorted(generated) == ["bert/configs/pinned.pbtxt", "resnet/configs/pinned.pbtxt"]
    news = {**d.inputs(), "generated": generated}
    cuts = []

    def die_in_a_variant(url: str) -> None:
        if url.endswith("/configs/pinned.pbtxt") and not cuts:
            cuts.append(url)
            d.proxy.die_after(100)  # in the middle of this request's headers

    client, _ = hooked(news, "PutObject", die_in_a_variant)
    with pytest.raises(S3Error) as failure:
        sync_tree(client, news)
    assert cuts and d.proxy.deaths == 1
    assert_one_line(str(failure.value))
    assert "no object was deleted" in str(failure.value)
    assert_nothing_deleted(d)
    assert_claims_only_what_is_held(d)

    d.proxy.restart()
    outs = UploadProvider().update(d.id, d.outs, news).outs
    expected = local(d.root) | {rel: text.encode() for rel, text in generated.items()}
    held = objects(d)
    assert held == expected
    assert_objects_carry_their_sha256(d, held)
    record = manifest(d)
    assert "pending" not in record
    assert {rel: e["sha256"] for rel, e in record["files"].items()} == {rel: sha(b) for rel, b in expected.items()}
    assert outs["fileCount"] == len(expected) and outs["contentSha256"] == tree_sha(expected)
    assert UploadProvider().read(d.id, {**news, **outs}).inputs is None

    # Dropping the preset deletes its variants, and only them.
    outs = UploadProvider().update(d.id, outs, d.inputs()).outs
    assert outs["deletedFiles"] == 2
    assert_mirrors_source(d, outs)
