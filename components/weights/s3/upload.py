"""Weight uploads: UploadProvider (a Pulumi dynamic provider) and its resource, WeightUpload.

The provider syncs a local model repository to a key prefix by content hash (sha256, kept in
object metadata and in a manifest object outside the prefix, manifest.py): unchanged files are
not sent, large files go in multipart. It never loses data: the source is listed and hashed
completely before the bucket is touched (tree.py); the manifest only claims what the bucket
holds (keys being changed are marked pending first); every object records the sha256 of
exactly the bytes it received, and a file that changes while it is sent is sent again once or
fails the update; deletions come last, only for keys the manifest recorded. `up` checks the
manifest against one listing of the prefix (keys, sizes, ETags), in diff and update, and sends
again what is gone or rewritten; refresh verifies every object's content (a HEAD each) and reports
a missing object or bucket as drift. See ``sync_tree`` and ``audit``. Files the program generates from the source (tuning
presets' config variants, input ``generated``) are synced with the source's under the same
rules: checked before the bucket is touched, recorded in the manifest, deleted when dropped.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import stat
import threading
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import pulumi
from pulumi.dynamic import CheckFailure, CreateResult, DiffResult, ReadResult, UpdateResult

from inference_platform.weights.s3.client import S3Error, client, content_md5, plain
from inference_platform.weights.s3.manifest import (
    Listed,
    Manifest,
    Target,
    audit,
    bucket_differs,
    content_outputs,
    head_object,
    holds,
    list_prefix,
    read_manifest,
    unlisted_entries,
    write_manifest,
)
from inference_platform.weights.s3.parallel import parallel_map
from inference_platform.weights.s3.provider import S3Provider, changed_inputs, has_unknowns, resource_inputs
from inference_platform.weights.s3.tree import (
    GeneratedFile,
    LocalFile,
    SourceError,
    changed_error,
    file_identity,
    fingerprint,
    generated_files,
    generated_key_problem,
    hash_file,
    local_files,
    open_regular,
    refuse_broken_configs,
    stat_fields,
)

UPLOAD_INPUTS = ("bucket", "endpoint", "region", "accessKeyId", "secretAccessKey", "source", "prefix", "fingerprint",
                 "generated")
MULTIPART_BYTES = 64 * 1024 * 1024
# 16 MiB parts (never above MULTIPART_BYTES): the first part leaves sooner and the last one takes less time
# alone; measured against 64 and 8 MiB on SeaweedFS (docs/performance.md). At most one part per worker is
# in memory. S3 allows 5 MiB to 5 GiB and 10,000 parts: larger files get larger parts (MAX_PARTS).
PART_BYTES = 16 * 1024 * 1024
MAX_PARTS = 10_000
DRIFTED = "drifted"


# Sending.


def _settled(path: Path, before: os.stat_result, sha: str) -> Optional[os.stat_result]:
    """The file's stat if it still holds the content that was sent (`sha`), else None."""
    try:
        now = os.stat(path)
    except OSError:
        return None
    if file_identity(now) == file_identity(before):
        return now
    if not stat.S_ISREG(now.st_mode):
        return None
    try:
        again, st = hash_file(path)
    except SourceError:
        return None
    return st if again == sha else None


def _etag(response: dict[str, Any]) -> dict[str, str]:
    """The ETag the server gave the object, for the manifest: the next runs compare it with one listing."""
    etag = str(response.get("ETag", "")).strip('"').lower()
    return {"etag": etag} if etag else {}


def _send_small(target: Target, f: LocalFile) -> dict[str, Any]:
    """One PUT of the bytes read, with their sha256; sent again once if the file changed meanwhile."""
    for _ in range(2):
        with open_regular(f.path) as (fh, before):
            if before.st_size >= MULTIPART_BYTES:
                continue  # grew since it was hashed: changed
            body = fh.read(MULTIPART_BYTES)
        sha = hashlib.sha256(body).hexdigest()
        md5 = hashlib.md5(body, usedforsecurity=False)
        # Content-MD5: the server refuses the object unless it received exactly these bytes.
        put = target.call(f"uploading {f.path} to {target.bucket}/{target.key(f.rel)}", target.put_small,
                          Bucket=target.bucket, Key=target.key(f.rel), Body=body, Metadata={"sha256": sha},
                          ContentMD5=base64.b64encode(md5.digest()).decode())
        settled = _settled(f.path, before, sha)
        if settled is not None:
            return {"sha256": sha, **stat_fields(settled), "md5": md5.hexdigest(), **_etag(put)}
    raise changed_error(f.path, "uploaded")


@dataclass(frozen=True)
class PartSenders:
    """Where the parts of every multipart file go: one pool, and slots bounding the parts in memory and in flight."""

    pool: ThreadPoolExecutor
    slots: threading.BoundedSemaphore

    @classmethod
    @contextlib.contextmanager
    def of(cls, workers: int):
        with ThreadPoolExecutor(workers) as pool:
            yield cls(pool, threading.BoundedSemaphore(workers))


def _send_parts(target: Target, f: LocalFile, upload_id: str, senders: PartSenders) -> tuple[str, os.stat_result, list[dict]]:
    """Read the file once, in order, hashing what is sent; a part is read only once a slot is free."""
    key = target.key(f.rel)
    h, failed, futures = hashlib.sha256(), threading.Event(), []

    def part(number: int, chunk: bytes) -> dict[str, Any]:
        try:
            response = target.call(f"uploading part {number} of {f.path} to {target.bucket}/{key}", target.s3.upload_part,
                                   Bucket=target.bucket, Key=key, UploadId=upload_id, PartNumber=number, Body=chunk,
                                   ContentMD5=content_md5(chunk))
        except BaseException:
            failed.set()
            raise
        finally:
            senders.slots.release()
        return {"PartNumber": number, "ETag": response["ETag"]}

    with open_regular(f.path) as (fh, before):
        part_size = max(min(PART_BYTES, MULTIPART_BYTES), -(-before.st_size // MAX_PARTS))
        while not failed.is_set():
            senders.slots.acquire()
            try:
                chunk = fh.read(part_size)
            except BaseException:
                senders.slots.release()
                raise
            if not chunk:
                senders.slots.release()
                break
            h.update(chunk)
            futures.append(senders.pool.submit(part, len(futures) + 1, chunk))
        wait(futures, return_when=FIRST_EXCEPTION)
        for future in futures:
            if future.cancel():
                senders.slots.release()
    return h.hexdigest(), before, [future.result() for future in futures]


def _abort_quietly(target: Target, key: str, upload_id: str) -> None:
    try:
        target.s3.abort_multipart_upload(Bucket=target.bucket, Key=key, UploadId=upload_id)
    except Exception:  # noqa: BLE001 - the server may be gone; the lifecycle rule removes the parts after 7 days
        pass


def _started_upload(target: Target, f: LocalFile, key: str, sha: str) -> str:
    """A new multipart upload's id. An answer without one (seen when the server's connection is cut
    mid-upload, tests/live/test_upload_faults.py) is a server error like any other, not a KeyError."""
    doing = f"starting the upload of {f.path} to {target.bucket}/{key}"
    started = target.call(doing, target.s3.create_multipart_upload, Bucket=target.bucket, Key=key, Metadata={"sha256": sha})
    if not started.get("UploadId"):
        raise S3Error(f"{doing}: the server's answer held no UploadId")
    return started["UploadId"]


def _send_large(target: Target, f: LocalFile, sha: Optional[str], senders: PartSenders) -> dict[str, Any]:
    """Multipart, declaring `sha` (hashed before); completed only when the bytes sent hash to it."""
    key = target.key(f.rel)
    for _ in range(2):
        if sha is None:
            sha, st = hash_file(f.path)
            if st.st_size < MULTIPART_BYTES:
                return _send_small(target, f)  # rewritten smaller: one PUT
        upload_id = _started_upload(target, f, key, sha)
        try:
            sent, before, parts = _send_parts(target, f, upload_id, senders)
            if sent != sha or before.st_size < MULTIPART_BYTES:
                # Changed since it was hashed: the object would not hold what its metadata says.
                # (Below the threshold the parts could be too small; the next attempt sends it in one PUT.)
                _abort_quietly(target, key, upload_id)
                sha = None
                continue
            done = target.call(f"finishing the upload of {f.path} to {target.bucket}/{key}",
                               target.s3.complete_multipart_upload,
                               Bucket=target.bucket, Key=key, UploadId=upload_id, MultipartUpload={"Parts": parts})
        except BaseException:
            _abort_quietly(target, key, upload_id)
            raise
        settled = _settled(f.path, before, sent)
        if settled is not None:
            return {"sha256": sent, **stat_fields(settled), **_etag(done)}
        sha = None
    raise changed_error(f.path, "uploaded")


def _send_generated(target: Target, g: GeneratedFile) -> dict[str, Any]:
    """One PUT of a generated file: its bytes are in memory, so they cannot change while sent."""
    entry = g.entry
    put = target.call(f"uploading the generated {g.rel} to {target.bucket}/{target.key(g.rel)}", target.put_small,
                      Bucket=target.bucket, Key=target.key(g.rel), Body=g.body, Metadata={"sha256": entry["sha256"]},
                      ContentMD5=content_md5(g.body))
    return {**entry, **_etag(put)}


def _send_one(target: Target, f: LocalFile | GeneratedFile) -> dict[str, Any]:
    return _send_generated(target, f) if isinstance(f, GeneratedFile) else _send_small(target, f)


def _send_all(target: Target, todo: list[LocalFile | GeneratedFile], local: dict[str, dict[str, Any]],
              workers: int) -> dict[str, dict[str, Any]]:
    """Send every file; the manifest entry of each, describing exactly the bytes the bucket received."""
    multipart = {f.rel for f in todo if isinstance(f, LocalFile) and local[f.rel]["size"] >= MULTIPART_BYTES}
    # Large files first, each read by a worker that hands its parts to the shared senders, while the
    # other workers send small files: the long transfers start at once and overlap the short ones.
    ordered = sorted(todo, key=lambda f: f.rel not in multipart)

    def send(f: LocalFile | GeneratedFile) -> dict[str, Any]:
        if f.rel in multipart:
            return _send_large(target, f, local[f.rel]["sha256"], senders)
        return _send_one(target, f)

    try:
        with PartSenders.of(workers) as senders:
            return dict(zip([f.rel for f in ordered], parallel_map(send, ordered, workers), strict=True))
    finally:
        target.close()


def _delete(target: Target, rels: list[str]) -> None:
    keys = [target.key(rel) for rel in rels]
    for i in range(0, len(keys), 1000):
        result = target.call(f"removing deleted files from {target.bucket}/{target.prefix}", target.s3.delete_objects,
                             Bucket=target.bucket, Delete={"Objects": [{"Key": k} for k in keys[i:i + 1000]], "Quiet": True})
        if result.get("Errors"):
            first = result["Errors"][0]
            raise S3Error(f"removing {target.bucket}/{first.get('Key')}: {first.get('Code')}: {first.get('Message')}")


# The sync.


def upload_client(props: dict[str, Any]):
    """The client an upload uses: no timestamp in the responses is read, so none is parsed."""
    return client(props, raw_timestamps=True)


def _quick_check(f: LocalFile, known: Optional[dict[str, Any]]) -> bool:
    """rsync's quick check: the manifest's entry still describes the file when its size and times match."""
    return bool(known and known.get("sha256") and all(known.get(k) == v for k, v in stat_fields(f.stat).items()))


def _hashed_entry(f: LocalFile, known: Optional[dict[str, Any]]) -> dict[str, Any]:
    """The manifest entry of a file the quick check did not pass: hashed, keeping the known ETag when the content is the same."""
    sha, st = hash_file(f.path)
    same = {k: known[k] for k in ("md5", "etag") if known.get(k)} if known and known.get("sha256") == sha else {}
    return {"sha256": sha, **stat_fields(st), **same}


@contextlib.contextmanager
def _nothing_changed_yet():
    try:
        yield
    except SourceError as err:
        raise SourceError(f"{err}; nothing in the bucket was changed") from None


def _hash_source(files: list[LocalFile], old: Manifest, workers: int) -> dict[str, dict[str, Any]]:
    """Every file's entry, or SourceError: the bucket is not touched before this succeeds."""
    # Only the files to hash go to the pool: a task per unchanged file cost more than its check.
    unchanged = {f.rel: old.files[f.rel] for f in files if _quick_check(f, old.files.get(f.rel))}
    to_hash = [f for f in files if f.rel not in unchanged]
    entries = parallel_map(lambda f: _hashed_entry(f, old.files.get(f.rel)), to_hash, workers)
    return unchanged | dict(zip([f.rel for f in to_hash], entries, strict=True))


def _held(target: Target, rels: list[str], local: dict[str, dict[str, Any]], listing: dict[str, Listed], workers: int) -> set[str]:
    """Of `rels`, those whose object already holds the local content (listed at that size, then `holds`)."""
    candidates = [rel for rel in rels if (listed := listing.get(target.key(rel))) is not None and listed.size == local[rel]["size"]]
    heads = parallel_map(lambda rel: head_object(target, rel), candidates, workers)
    return {rel for rel, head in zip(candidates, heads, strict=True) if head is not None and holds(head, local[rel])}


def _with_known_etags(local: dict[str, dict[str, Any]], old: Manifest) -> dict[str, dict[str, Any]]:
    """Entries of unchanged content keep the ETag the manifest recorded (generated files are built without it)."""
    def known(rel: str, entry: dict[str, Any]) -> dict[str, Any]:
        recorded = old.files.get(rel, {})
        if "etag" in entry or not recorded.get("etag") or recorded.get("sha256") != entry["sha256"]:
            return entry
        return {**entry, "etag": recorded["etag"]}
    return {rel: known(rel, entry) for rel, entry in local.items()}


def sync_tree(s3, props: dict[str, Any], workers: int = 8, verify: bool = False) -> dict[str, Any]:
    """Make `prefix` hold exactly the files of `source` and the `generated` ones, by content
    hash; never lose an object the source holds.

    1. List and hash the source completely (a file is hashed only when its size or
       times differ from the manifest) and check the generated files against it.
       Any error stops here: nothing remote changed.
    2. List the prefix once. Trust the manifest for files it records that the listing
       shows at the recorded size and ETag; check the others (and, with `verify`, all)
       with a HEAD for each listed at that size: an object lost or rewritten behind the
       manifest's back is sent again.
    3. Before touching any key, rewrite the manifest without it (marked pending).
    4. Send what differs: each object carries the sha256 of exactly the bytes sent; a
       file that changed while it was sent is sent again once, then the update fails.
    5. Only then delete the files removed from the source (versioning keeps them until
       the lifecycle expires them) and write the complete manifest.
    """
    target = Target.of(s3, props)
    with _nothing_changed_yet():
        files = local_files(props["source"])
        refuse_broken_configs(props["source"])
        generated = generated_files(props.get("generated") or {}, files)
    old = read_manifest(target)
    with _nothing_changed_yet():
        local = _with_known_etags(_hash_source(files, old, workers) | {g.rel: g.entry for g in generated}, old)
    if not files and (old.files or old.pending):
        raise SourceError(f"weight upload source {props['source']!r} is empty, but {target.bucket}/{target.prefix} holds "
                          f"{len(old.files)} uploaded files; refusing to delete them all (an unmounted volume?); nothing in "
                          "the bucket was changed. To retire the upload, remove it from weightCaches.s3.uploads (its objects stay)")
    items = sorted([*files, *generated], key=lambda f: f.rel)
    listing = list_prefix(target)
    trusted = {rel: old.files[rel] for rel in local if rel in old.files and old.files[rel].get("sha256") == local[rel]["sha256"]}
    lost = unlisted_entries(trusted, target, listing)
    checked = {f.rel for f in items if verify or f.rel not in old.files or f.rel in lost}
    held = _held(target, sorted(checked), local, listing, workers) if checked else set()
    for rel in held:  # verified by its sha256: record the ETag the listing shows, so the next run trusts it
        local[rel] = {**local[rel], "etag": listing[target.key(rel)].etag}
    todo = [f for f in items
            if (f.rel not in held if f.rel in checked else old.files[f.rel].get("sha256") != local[f.rel]["sha256"])]
    gone = [rel for rel in sorted((set(old.files) | old.pending) - set(local)) if target.key(rel) in listing]
    touched = {f.rel for f in todo} | set(gone)
    if touched:
        write_manifest(target, {rel: e for rel, e in local.items() if rel not in touched}, old.pending | touched)
    try:
        sent = _send_all(target, todo, local, workers)
    except S3Error as err:
        raise type(err)(f"{err}; no object was deleted and the upload manifest claims none of the unfinished files: "
                        "run `pulumi up` again to finish") from None
    _delete(target, gone)
    files_now = {**local, **sent}
    if touched or files_now != old.files or old.pending or not old.found:
        write_manifest(target, files_now)
    return {
        **content_outputs(files_now),
        "uploadedFiles": len(todo),
        "uploadedBytes": sum(e["size"] for e in sent.values()),
        "deletedFiles": len(gone),
        "drift": None,
    }


class UploadProvider(S3Provider):
    """Syncs a local model repository to a bucket prefix. Stateless: see provider.py."""

    def _more_failures(self, news: dict[str, Any]) -> list[CheckFailure]:
        failures = []
        source = news.get("source")
        if isinstance(source, str) and not Path(source).is_dir():
            failures.append(CheckFailure("source", f"weight upload source {source!r} is not a directory (resolved to {Path(source).resolve()})"))
        generated = news.get("generated", {})
        if not isinstance(generated, dict) or not all(isinstance(text, str) for text in generated.values()):
            failures.append(CheckFailure("generated", "generated must map keys below the prefix to file text"))
        else:
            failures += [CheckFailure("generated", problem) for problem in map(generated_key_problem, generated) if problem]
        return failures

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        # An upload without generated files leaves the input out (as did every state written before it existed).
        changed = changed_inputs({"generated": {}, **olds}, {"generated": {}, **news}, UPLOAD_INPUTS)
        if not changed and not has_unknowns(news):
            # Unchanged inputs: does the bucket still hold what the manifest claims? One GET and one
            # listing (no HEAD per object), so an object lost behind our back is sent again by this `up`.
            plain_news = {k: plain(v) for k, v in news.items()}
            return DiffResult(changes=bucket_differs(upload_client(plain_news), plain_news), replaces=[], stables=[])
        # Re-uploading to a new place is an update; the old objects stay (a running version may read them).
        return DiffResult(changes=bool(changed) or has_unknowns(news), replaces=[], stables=[])

    def create(self, props: dict[str, Any]) -> CreateResult:
        props = {k: plain(v) for k, v in props.items()}
        result = sync_tree(upload_client(props), props)
        return CreateResult(f"{props['bucket']}/{props['prefix'].strip('/')}", {**props, **result})

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """Refresh: does the bucket hold the content of every manifest entry (sha256 or plain-MD5 ETag, not sizes)?

        On drift the outputs describe only what was verified, `drift` says what differs,
        and the fingerprint input becomes "drifted", so the next `pulumi up` updates and
        the update checks every file against the bucket.
        """
        props = {k: plain(v) for k, v in props.items()}
        verified, problems = audit(upload_client(props), props)
        if not problems:
            return ReadResult(id_, {**props, "drift": None} if props.get("drift") else props)
        outs = {**props, **content_outputs(verified), "drift": "; ".join(problems), "fingerprint": DRIFTED}
        inputs = {k: props[k] for k in UPLOAD_INPUTS if k in props} | {"fingerprint": DRIFTED}
        return ReadResult(id_, outs, inputs)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        news = {k: plain(v) for k, v in news.items()}
        verify = olds.get("fingerprint") == DRIFTED
        return UpdateResult({**news, **sync_tree(upload_client(news), news, verify=verify)})

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        # Uploaded weights outlive the upload resource: a running version may still read them.
        return None


class WeightUpload(pulumi.dynamic.Resource, module="s3", name="Upload"):
    """A local model repository kept in sync with a bucket prefix by content hash, with the
    files `generated` from it (`<model>/configs/<preset>.pbtxt` -> text) uploaded beside its own."""

    # Outputs: fileCount, totalBytes, uploadedFiles, uploadedBytes, deletedFiles, contentSha256, drift.

    def __init__(
        self,
        name: str,
        *,
        bucket: pulumi.Input[str],
        endpoint: pulumi.Input[str],
        region: pulumi.Input[str],
        access_key_id: pulumi.Input[str],
        secret_access_key: pulumi.Input[str],
        source: str,
        prefix: str,
        generated: Optional[dict[str, str]] = None,
        opts: Optional[pulumi.ResourceOptions] = None,
    ):
        creds, opts = resource_inputs(access_key_id, secret_access_key, opts)
        props = {
            "bucket": bucket,
            "endpoint": endpoint,
            "region": region,
            **creds,
            "source": source,
            "prefix": prefix,
            **({"generated": generated} if generated else {}),
            "fingerprint": fingerprint(source),
            "fileCount": None,
            "totalBytes": None,
            "uploadedFiles": None,
            "uploadedBytes": None,
            "deletedFiles": None,
            "contentSha256": None,
            "drift": None,
        }
        super().__init__(UploadProvider(), name, props, opts)
