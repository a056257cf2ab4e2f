"""The upload manifest (the bucket's record of what each key holds) and checking the bucket against it.

The manifest is an object outside the prefix (Triton never sees it): content per relative path
the bucket holds, and the paths an unfinished update was changing (pending). ``audit`` is what
refresh runs: it compares every object's content, not its size, with the manifest.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Optional

from inference_platform.weights.s3.client import S3Error, call_or_explain, content_md5, error_code, explain, http_status
from inference_platform.weights.s3.parallel import parallel_map
from inference_platform.weights.s3.small_put import SmallPut

MANIFEST_ROOT = ".inference-platform/uploads"
KMS_ENCRYPTION = frozenset({"aws:kms", "aws:kms:dsse"})


class BucketMissing(S3Error):
    """The bucket an upload writes to does not exist."""


def manifest_key(prefix: str) -> str:
    # Outside the prefix, so Triton never sees it inside the model repository.
    return f"{MANIFEST_ROOT}/{prefix.strip('/')}.json"


@dataclass(frozen=True)
class Manifest:
    """Content per relative path that the bucket holds, and paths an unfinished update was changing.

    `files` only ever claims what the bucket holds: before an update touches a key it
    rewrites the manifest without that key and with the key in `pending`; the complete
    manifest is written after every upload and deletion succeeded.
    """

    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    pending: frozenset[str] = frozenset()
    found: bool = False


@dataclass(frozen=True)
class Target:
    """Where an upload goes: client, bucket and prefix, and the endpoint for error messages."""

    s3: Any
    props: dict[str, Any]
    bucket: str
    prefix: str

    @classmethod
    def of(cls, s3, props: dict[str, Any]) -> Target:
        return cls(s3, props, props["bucket"], props["prefix"].strip("/"))

    def key(self, rel: str) -> str:
        return f"{self.prefix}/{rel}"

    @functools.cached_property
    def put_small(self) -> SmallPut:
        """PutObject for upload bodies, lean on the happy path of small ones (small_put.py)."""
        return SmallPut(self.s3, self.props)

    def close(self) -> None:
        """Close the lean PUT's connections, if it was used."""
        if "put_small" in self.__dict__:
            self.put_small.close()

    @property
    def manifest(self) -> str:
        return manifest_key(self.prefix)

    def call(self, what: str, fn, **kwargs):
        return call_or_explain(self.props, what, fn, **kwargs)

    def missing_bucket(self) -> BucketMissing:
        return BucketMissing(f"bucket {self.bucket} does not exist at {self.props['endpoint']} (deleted outside Pulumi?); "
                             "`pulumi refresh` then `pulumi up` recreates it and uploads again")


def read_manifest(target: Target) -> Manifest:
    from botocore.exceptions import ClientError

    try:
        body = target.s3.get_object(Bucket=target.bucket, Key=target.manifest)["Body"].read()
    except ClientError as err:
        if error_code(err) == "NoSuchBucket":
            raise target.missing_bucket() from None
        if error_code(err) in ("NoSuchKey", "404") or http_status(err) == 404:
            return Manifest()
        raise explain(err, f"reading the upload manifest {target.manifest}", target.props["endpoint"]) from None
    except Exception as err:  # noqa: BLE001
        raise explain(err, f"reading the upload manifest {target.manifest}", target.props["endpoint"]) from None
    try:
        data = json.loads(body)
        files, pending = dict(data["files"]), frozenset(data.get("pending", ()))
        if all(isinstance(e.get("sha256"), str) and isinstance(e.get("size"), int) for e in files.values()):
            return Manifest(files, pending, True)
    except (ValueError, KeyError, TypeError, AttributeError):
        pass
    # Unreadable: it claims nothing, so every file is checked against the bucket itself.
    return Manifest()


def write_manifest(target: Target, files: dict[str, dict[str, Any]], pending: frozenset[str] = frozenset()) -> None:
    record: dict[str, Any] = {"files": files}
    if pending:
        record["pending"] = sorted(pending)
    body = json.dumps(record, sort_keys=True).encode()
    target.call(f"writing the upload manifest {target.manifest}", target.s3.put_object, Bucket=target.bucket,
                Key=target.manifest, Body=body, ContentType="application/json", ContentMD5=content_md5(body))


# What the bucket holds.


@dataclass(frozen=True)
class Listed:
    """An object as ListObjectsV2 reports it."""

    size: int
    etag: str


def list_prefix(target: Target) -> dict[str, Listed]:
    """Size and ETag per key under the prefix (one request per 1000 keys)."""
    from botocore.exceptions import ClientError

    sizes: dict[str, Listed] = {}
    try:
        for page in target.s3.get_paginator("list_objects_v2").paginate(Bucket=target.bucket, Prefix=target.prefix + "/"):
            for obj in page.get("Contents", []):
                sizes[obj["Key"]] = Listed(obj["Size"], str(obj.get("ETag", "")).strip('"').lower())
    except ClientError as err:
        if error_code(err) == "NoSuchBucket":
            raise target.missing_bucket() from None
        raise explain(err, f"listing {target.bucket}/{target.prefix}", target.props["endpoint"]) from None
    except Exception as err:  # noqa: BLE001
        raise explain(err, f"listing {target.bucket}/{target.prefix}", target.props["endpoint"]) from None
    return sizes


def head_object(target: Target, rel: str) -> Optional[dict[str, Any]]:
    """The object's HEAD response, or None when it (or its bucket) is gone."""
    from botocore.exceptions import ClientError

    key = target.key(rel)
    try:
        return target.s3.head_object(Bucket=target.bucket, Key=key)
    except ClientError as err:
        if http_status(err) == 404 or error_code(err) in ("404", "NoSuchKey", "NotFound", "NoSuchBucket"):
            return None
        raise explain(err, f"reading {target.bucket}/{key}", target.props["endpoint"]) from None
    except Exception as err:  # noqa: BLE001
        raise explain(err, f"reading {target.bucket}/{key}", target.props["endpoint"]) from None


def _plain_md5(response: dict[str, Any]) -> Optional[str]:
    """The ETag when it is the MD5 of the content: single-part, not encrypted with KMS or a customer key."""
    etag = str(response.get("ETag", "")).strip('"').lower()
    if response.get("ServerSideEncryption") in KMS_ENCRYPTION or response.get("SSECustomerAlgorithm"):
        return None
    return etag if len(etag) == 32 and all(c in "0123456789abcdef" for c in etag) else None


def holds(head: dict[str, Any], entry: dict[str, Any]) -> bool:
    """Does the object (its HEAD) hold the entry's content? By the sha256 recorded with it, else by a plain-MD5 ETag."""
    if head.get("ContentLength") != entry.get("size"):
        return False
    recorded = (head.get("Metadata") or {}).get("sha256")
    if recorded:
        return recorded == entry.get("sha256")
    md5 = _plain_md5(head)
    return md5 is not None and md5 == entry.get("md5")


def listed_as_recorded(listed: Optional[Listed], entry: dict[str, Any]) -> bool:
    """Does the listing show the object the manifest entry records: there, at its size, with its ETag?

    The ETag compared is the one recorded from the server (after a PUT or a verified HEAD);
    an entry without one falls back to its plain MD5 when the listed ETag is one. A mismatch
    only means "look closer": the caller checks the object's sha256 before sending anything.
    """
    if listed is None or listed.size != entry.get("size"):
        return False
    if entry.get("etag"):
        return listed.etag == entry["etag"]
    if entry.get("md5") and _plain_md5({"ETag": listed.etag}):
        return listed.etag == entry["md5"]
    return True


def unlisted_entries(files: dict[str, dict[str, Any]], target: Target, listing: dict[str, Listed]) -> set[str]:
    """The manifest's paths whose object the listing does not show as recorded (gone, resized, rewritten)."""
    return {rel for rel, entry in files.items() if not listed_as_recorded(listing.get(target.key(rel)), entry)}


def bucket_differs(s3, props: dict[str, Any]) -> bool:
    """Whether the bucket no longer holds what the manifest says, from one GET and one listing (no HEAD)."""
    target = Target.of(s3, props)
    try:
        manifest = read_manifest(target)
        if not manifest.found or manifest.pending:
            return True
        return bool(unlisted_entries(manifest.files, target, list_prefix(target)))
    except BucketMissing:
        return True


def content_outputs(files: dict[str, dict[str, Any]]) -> dict[str, Any]:
    tree = json.dumps({rel: e["sha256"] for rel, e in files.items()}, sort_keys=True).encode()
    return {"fileCount": len(files), "totalBytes": sum(e["size"] for e in files.values()),
            "contentSha256": hashlib.sha256(tree).hexdigest()}


def _some(rels: list[str], shown: int = 5) -> str:
    return ", ".join(rels[:shown]) + (f" and {len(rels) - shown} more" if len(rels) > shown else "")


def audit(s3, props: dict[str, Any], workers: int = 16) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """What the bucket verifiably holds of the manifest, and each way it differs (none: in sync).

    One HEAD per manifest entry; the content is compared, not the size. A missing bucket
    or object is a difference, never an error.
    """
    target = Target.of(s3, props)
    try:
        manifest = read_manifest(target)
    except BucketMissing:
        return {}, [f"bucket {target.bucket} does not exist"]
    problems = []
    if not manifest.found:
        problems.append(f"the upload manifest {target.manifest} is missing or unreadable")
    if manifest.pending:
        problems.append(f"an update did not finish ({len(manifest.pending)} files pending)")
    rels = sorted(manifest.files)
    heads = parallel_map(lambda rel: head_object(target, rel), rels, workers)
    missing = [rel for rel, head in zip(rels, heads, strict=True) if head is None]
    other = [rel for rel, head in zip(rels, heads, strict=True) if head is not None and not holds(head, manifest.files[rel])]
    if missing:
        problems.append(f"{len(missing)} missing ({_some(missing)})")
    if other:
        problems.append(f"{len(other)} with other content ({_some(other)})")
    verified = {rel: manifest.files[rel] for rel in rels if rel not in missing and rel not in other}
    return verified, problems
