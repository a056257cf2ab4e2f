"""Dynamic providers (boto3) for an S3-compatible weight bucket and weight uploads.

Pulumi runs a dynamic provider in a separate process: it serialises the provider
object with dill into the resource's ``__provider`` input and loads it there. So the
provider objects here hold no state at all (no client, lock or credential): every
call builds its own client from the resource's properties, where the credentials
arrive as secret inputs. The classes are pickled by reference, so the provider
process (started in the project directory) imports this module; it must stay free
of side effects at import time.

- ``BucketProvider``: a bucket with versioning, a lifecycle rule expiring
  noncurrent versions, and public access refused. An existing bucket that is ours
  is adopted; one owned by someone else is an error. Settings change in place; only
  a new bucket name or endpoint replaces it. A non-empty bucket is deleted only with
  ``forceDestroy``.
- ``UploadProvider``: syncs a local model repository to a key prefix by content
  hash (sha256, kept in object metadata and in a manifest object outside the
  prefix): unchanged files are not sent, large files go in multipart.
"""

from __future__ import annotations

import hashlib
import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Optional
from urllib.parse import urlparse

import pulumi
from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, ReadResult, ResourceProvider, UpdateResult

LIFECYCLE_RULE_ID = "inference-platform-noncurrent-versions"
MANIFEST_ROOT = ".inference-platform/uploads"
MULTIPART_BYTES = 64 * 1024 * 1024
CREDENTIAL_KEYS = ("accessKeyId", "secretAccessKey")
# Error codes of servers that lack an optional feature (MinIO, Ceph RGW, ...).
UNSUPPORTED_CODES = frozenset({"NotImplemented", "XNotImplemented", "MethodNotAllowed", "NotSupported"})
CREDENTIAL_CODES = frozenset({
    "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidClientTokenId", "InvalidSecurity",
    "AccessDenied", "AuthorizationHeaderMalformed", "ExpiredToken", "InvalidToken",
})
_SECRET_SIG = ("4dabf18193072939515e22adb298388d", "1b47061264138c4ac30d75fd1eb44270")


class S3Error(Exception):
    """A failure talking to the S3 endpoint, phrased for the person running `pulumi up`."""


# --------------------------------------------------------------------------- connection


def _plain(value: Any) -> Any:
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


def client(props: dict[str, Any]):
    """A fresh boto3 S3 client for the resource's endpoint, region and credentials."""
    import boto3
    from botocore.config import Config

    endpoint = _plain(props.get("endpoint"))
    problem = endpoint_problem(endpoint)
    if problem:
        raise S3Error(problem)
    key_id, secret = (_plain(props.get(k)) for k in CREDENTIAL_KEYS)
    if not key_id or not secret:
        raise S3Error("S3 credentials are missing: set inference-platform:s3AccessKeyId and s3SecretAccessKey as secrets")
    config = Config(
        region_name=_plain(props.get("region")) or "us-east-1",
        # Path-style addressing and checksums only where required work on every S3-compatible server.
        s3={"addressing_style": "path"},
        request_checksum_calculation="when_required",
        response_checksum_validation="when_required",
        retries={"max_attempts": 3, "mode": "standard"},
        connect_timeout=10,
        read_timeout=120,
        max_pool_connections=32,
    )
    session = boto3.session.Session(aws_access_key_id=key_id, aws_secret_access_key=secret)
    try:
        return session.client("s3", endpoint_url=endpoint, config=config)
    except ValueError as err:
        raise S3Error(f"endpoint {endpoint!r} is not usable: {err}") from None


def _code(err: Exception) -> str:
    return str(getattr(err, "response", {}).get("Error", {}).get("Code", ""))


def _status(err: Exception) -> int:
    return int(getattr(err, "response", {}).get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)


def explain(err: Exception, what: str, endpoint: str) -> S3Error:
    """Turn a botocore error into one clear sentence."""
    from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError

    if isinstance(err, S3Error):
        return err
    if isinstance(err, EndpointConnectionError):
        return S3Error(f"{what}: cannot reach the S3 endpoint {endpoint} ({err})")
    if isinstance(err, ClientError):
        code, status = _code(err), _status(err)
        message = err.response.get("Error", {}).get("Message", "")
        if code in CREDENTIAL_CODES or status == 403:
            return S3Error(
                f"{what}: the S3 endpoint {endpoint} refused the credentials ({code or status}: {message}); "
                "check the secrets inference-platform:s3AccessKeyId and s3SecretAccessKey"
            )
        return S3Error(f"{what}: {code or status}: {message}".rstrip(": "))
    if isinstance(err, BotoCoreError):
        return S3Error(f"{what}: S3 endpoint {endpoint}: {err}")
    return S3Error(f"{what}: {type(err).__name__}: {err}")


def _call(props: dict[str, Any], what: str, fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except Exception as err:  # noqa: BLE001 - every failure becomes one clear S3Error
        raise explain(err, what, _plain(props.get("endpoint"))) from None


def _unsupported(err: Exception) -> bool:
    return _code(err) in UNSUPPORTED_CODES or _status(err) == 501


def _has_unknowns(props: dict[str, Any]) -> bool:
    from pulumi.output import Unknown

    return any(isinstance(v, Unknown) for v in props.values())


def _check_common(news: dict[str, Any], failures: list[CheckFailure]) -> None:
    endpoint = news.get("endpoint")
    if isinstance(endpoint, str):
        problem = endpoint_problem(endpoint)
        if problem:
            failures.append(CheckFailure("endpoint", problem))


class _S3Provider(ResourceProvider):
    """Shared by both providers: stateless, endpoint checked before any request."""

    # The provider captures nothing secret; the credentials travel as secret inputs.
    serialize_as_secret_always = False

    def check(self, olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        failures: list[CheckFailure] = []
        _check_common(news, failures)
        return CheckResult(news, failures + self._more_failures(news))

    def _more_failures(self, news: dict[str, Any]) -> list[CheckFailure]:
        return []


def _resource_inputs(access_key_id, secret_access_key, opts: Optional[pulumi.ResourceOptions]):
    """Credential inputs (secret) and options that keep them secret in the state's outputs too."""
    creds = {"accessKeyId": pulumi.Output.secret(access_key_id), "secretAccessKey": pulumi.Output.secret(secret_access_key)}
    return creds, pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(additional_secret_outputs=list(CREDENTIAL_KEYS)))


def _changed(olds: dict[str, Any], news: dict[str, Any], keys) -> list[str]:
    return [k for k in keys if _plain(olds.get(k)) != _plain(news.get(k))]


# --------------------------------------------------------------------------- bucket


BUCKET_INPUTS = ("bucket", "endpoint", "region", "accessKeyId", "secretAccessKey", "versioning", "noncurrentDays", "forceDestroy")


def _lifecycle_rule(days: int) -> dict[str, Any]:
    return {
        "ID": LIFECYCLE_RULE_ID,
        "Filter": {"Prefix": ""},
        "Status": "Enabled",
        "NoncurrentVersionExpiration": {"NoncurrentDays": int(days)},
        # Parts of interrupted multipart uploads are invisible and would be kept forever.
        "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 7},
    }


def _other_lifecycle_rules(s3, props, bucket: str) -> list[dict[str, Any]]:
    from botocore.exceptions import ClientError

    try:
        rules = s3.get_bucket_lifecycle_configuration(Bucket=bucket).get("Rules", [])
    except ClientError as err:
        if _code(err) in ("NoSuchLifecycleConfiguration", *UNSUPPORTED_CODES):
            return []
        raise explain(err, f"reading the lifecycle of bucket {bucket}", props["endpoint"]) from None
    return [r for r in rules if r.get("ID") != LIFECYCLE_RULE_ID]


def configure_bucket(s3, props: dict[str, Any]) -> dict[str, Any]:
    """Apply versioning, lifecycle and public-access settings; return what the server now reports."""
    from botocore.exceptions import ClientError

    bucket = props["bucket"]
    if props.get("versioning", True):
        _call(props, f"enabling versioning on bucket {bucket}", s3.put_bucket_versioning,
              Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    elif _call(props, f"reading versioning of bucket {bucket}", s3.get_bucket_versioning, Bucket=bucket).get("Status"):
        # A bucket that was ever versioned can only be suspended.
        _call(props, f"suspending versioning on bucket {bucket}", s3.put_bucket_versioning,
              Bucket=bucket, VersioningConfiguration={"Status": "Suspended"})
    # Keep lifecycle rules someone else added to an adopted bucket; own only ours.
    rules = _other_lifecycle_rules(s3, props, bucket) + [_lifecycle_rule(props.get("noncurrentDays", 30))]
    _call(props, f"setting the lifecycle of bucket {bucket}", s3.put_bucket_lifecycle_configuration,
          Bucket=bucket, LifecycleConfiguration={"Rules": rules})
    try:
        s3.put_public_access_block(Bucket=bucket, PublicAccessBlockConfiguration={
            "BlockPublicAcls": True, "IgnorePublicAcls": True, "BlockPublicPolicy": True, "RestrictPublicBuckets": True,
        })
    except ClientError as err:
        if not _unsupported(err):
            raise explain(err, f"blocking public access to bucket {bucket}", props["endpoint"]) from None
    try:
        s3.put_bucket_acl(Bucket=bucket, ACL="private")
    except ClientError as err:
        if not _unsupported(err):
            raise explain(err, f"setting a private ACL on bucket {bucket}", props["endpoint"]) from None
    return observe_bucket(s3, props)


def observe_bucket(s3, props: dict[str, Any]) -> dict[str, Any]:
    """The bucket's settings as the server reports them."""
    from botocore.exceptions import ClientError

    bucket = props["bucket"]
    status = _call(props, f"reading versioning of bucket {bucket}", s3.get_bucket_versioning, Bucket=bucket).get("Status")
    days = None
    try:
        for rule in s3.get_bucket_lifecycle_configuration(Bucket=bucket).get("Rules", []):
            if rule.get("ID") == LIFECYCLE_RULE_ID and rule.get("Status") == "Enabled":
                days = rule.get("NoncurrentVersionExpiration", {}).get("NoncurrentDays")
    except ClientError as err:
        if _code(err) not in ("NoSuchLifecycleConfiguration", *UNSUPPORTED_CODES):
            raise explain(err, f"reading the lifecycle of bucket {bucket}", props["endpoint"]) from None
    blocked: Optional[bool] = None
    try:
        block = s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"]
        blocked = all(block.get(k) for k in ("BlockPublicAcls", "IgnorePublicAcls", "BlockPublicPolicy", "RestrictPublicBuckets"))
    except ClientError as err:
        if _code(err) != "NoSuchPublicAccessBlockConfiguration" and not _unsupported(err):
            raise explain(err, f"reading the public access block of bucket {bucket}", props["endpoint"]) from None
    return {
        "versioningStatus": status or "Off",
        "noncurrentDaysApplied": days,
        # None: the server has no public access block; the private ACL is then the guard.
        "publicAccessBlocked": blocked,
    }


def _owned_bucket_names(s3, props, bucket: str) -> set[str]:
    names: set[str] = set()
    try:
        # Prefix narrows the listing where the server supports it; others return every bucket.
        for page in s3.get_paginator("list_buckets").paginate(Prefix=bucket):
            names.update(b["Name"] for b in page.get("Buckets", []))
    except Exception as err:  # noqa: BLE001
        raise explain(err, "listing our buckets", props["endpoint"]) from None
    return names


def create_or_adopt(s3, props: dict[str, Any]) -> bool:
    """Create the bucket, or adopt it when it exists and is ours; True when adopted.

    A bucket that exists but is not in our own bucket listing belongs to someone
    else (even if they let us read it) and is refused.
    """
    from botocore.exceptions import ClientError

    bucket, region, endpoint = props["bucket"], props.get("region") or "us-east-1", props["endpoint"]
    foreign = S3Error(f"bucket {bucket} already exists at {endpoint} and belongs to another account; "
                      "choose another weightCaches.s3.bucket")
    try:
        s3.head_bucket(Bucket=bucket)
        exists = True
    except ClientError as err:
        if _status(err) == 404 or _code(err) in ("404", "NoSuchBucket", "NotFound"):
            exists = False
        elif _status(err) == 403 and _owned_bucket_names(s3, props, bucket) is not None:
            # Our credentials work (the listing succeeded) but this bucket is closed to us.
            raise foreign from None
        else:
            raise explain(err, f"looking up bucket {bucket}", endpoint) from None
    except Exception as err:  # noqa: BLE001
        raise explain(err, f"looking up bucket {bucket}", endpoint) from None
    if exists:
        if bucket in _owned_bucket_names(s3, props, bucket):
            return True
        raise foreign
    kwargs: dict[str, Any] = {"Bucket": bucket}
    if region != "us-east-1":
        kwargs["CreateBucketConfiguration"] = {"LocationConstraint": region}
    try:
        s3.create_bucket(**kwargs)
        return False
    except ClientError as err:
        if _code(err) == "BucketAlreadyOwnedByYou":
            return True
        if _code(err) == "BucketAlreadyExists":
            raise foreign from None
        raise explain(err, f"creating bucket {bucket}", endpoint) from None
    except Exception as err:  # noqa: BLE001
        raise explain(err, f"creating bucket {bucket}", endpoint) from None


def _versions(s3, props, bucket: str):
    """Every object version and delete marker of the bucket, page by page."""
    paginator = s3.get_paginator("list_object_versions")
    try:
        for page in paginator.paginate(Bucket=bucket):
            yield [{"Key": v["Key"], "VersionId": v["VersionId"]} for v in page.get("Versions", []) + page.get("DeleteMarkers", [])]
    except Exception as err:  # noqa: BLE001
        raise explain(err, f"listing bucket {bucket}", props["endpoint"]) from None


def empty_bucket(s3, props: dict[str, Any]) -> int:
    """Delete every object version, delete marker and unfinished upload; return how many versions went."""
    bucket, removed = props["bucket"], 0
    for page in _versions(s3, props, bucket):
        for i in range(0, len(page), 1000):
            batch = page[i:i + 1000]
            result = _call(props, f"emptying bucket {bucket}", s3.delete_objects,
                           Bucket=bucket, Delete={"Objects": batch, "Quiet": True})
            if result.get("Errors"):
                first = result["Errors"][0]
                raise S3Error(f"emptying bucket {bucket}: {first.get('Code')}: {first.get('Message')} ({first.get('Key')})")
            removed += len(batch)
    uploads = _call(props, f"listing uploads of bucket {bucket}", s3.list_multipart_uploads, Bucket=bucket)
    for up in uploads.get("Uploads", []):
        _call(props, f"aborting an upload in bucket {bucket}", s3.abort_multipart_upload,
              Bucket=bucket, Key=up["Key"], UploadId=up["UploadId"])
    return removed


class BucketProvider(_S3Provider):
    """CRUD of one S3-compatible bucket. Stateless: see the module docstring."""

    def _more_failures(self, news: dict[str, Any]) -> list[CheckFailure]:
        days = news.get("noncurrentDays")
        if isinstance(days, (int, float)) and not 1 <= days <= 3650:
            return [CheckFailure("noncurrentDays", f"noncurrentDays is {days}; allowed: 1-3650")]
        return []

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = _changed(olds, news, BUCKET_INPUTS)
        replaces = [k for k in ("bucket", "endpoint") if k in changed and not _has_unknowns({k: news.get(k)})]
        return DiffResult(changes=bool(changed) or _has_unknowns(news), replaces=replaces, stables=[],
                          delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        props = {k: _plain(v) for k, v in props.items()}
        s3 = client(props)
        adopted = create_or_adopt(s3, props)
        return CreateResult(props["bucket"], {**props, **configure_bucket(s3, props), "adopted": adopted})

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        from botocore.exceptions import ClientError

        props = {k: _plain(v) for k, v in props.items()}
        s3 = client(props)
        try:
            s3.head_bucket(Bucket=id_)
        except ClientError as err:
            if _status(err) == 404 or _code(err) in ("404", "NoSuchBucket", "NotFound"):
                return ReadResult(None, {})
            raise explain(err, f"reading bucket {id_}", props["endpoint"]) from None
        except Exception as err:  # noqa: BLE001
            raise explain(err, f"reading bucket {id_}", props["endpoint"]) from None
        observed = observe_bucket(s3, {**props, "bucket": id_})
        live = {
            "versioning": observed["versioningStatus"] == "Enabled",
            # None when our rule is gone: the next diff shows the drift and the update restores it.
            "noncurrentDays": observed["noncurrentDaysApplied"],
        }
        return ReadResult(id_, {**props, **observed, **live})

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        news = {k: _plain(v) for k, v in news.items()}
        s3 = client(news)
        return UpdateResult({**news, **configure_bucket(s3, news), "adopted": bool(olds.get("adopted"))})

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        from botocore.exceptions import ClientError

        props = {k: _plain(v) for k, v in props.items()}
        props["bucket"] = id_
        s3 = client(props)
        try:
            listing = s3.list_object_versions(Bucket=id_, MaxKeys=1)
        except ClientError as err:
            if _code(err) == "NoSuchBucket":
                return
            raise explain(err, f"listing bucket {id_}", props["endpoint"]) from None
        except Exception as err:  # noqa: BLE001
            raise explain(err, f"listing bucket {id_}", props["endpoint"]) from None
        not_empty = listing.get("Versions") or listing.get("DeleteMarkers")
        if not_empty and not props.get("forceDestroy"):
            raise S3Error(
                f"bucket {id_} is not empty, so it was not deleted (nothing was removed); "
                "empty it first, or set weightCaches.s3.forceDestroy: true and run `pulumi up` before deleting"
            )
        if not_empty:
            empty_bucket(s3, props)
        _call(props, f"deleting bucket {id_}", s3.delete_bucket, Bucket=id_)


class S3Bucket(pulumi.dynamic.Resource, module="s3", name="Bucket"):
    """An S3-compatible bucket: versioned, noncurrent versions expiring, public access refused."""

    # Outputs are attributes named like the properties: bucket, versioningStatus, publicAccessBlocked, ...
    bucket: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        *,
        bucket: pulumi.Input[str],
        endpoint: pulumi.Input[str],
        region: pulumi.Input[str],
        access_key_id: pulumi.Input[str],
        secret_access_key: pulumi.Input[str],
        versioning: bool = True,
        noncurrent_days: int = 30,
        force_destroy: bool = False,
        opts: Optional[pulumi.ResourceOptions] = None,
    ):
        creds, opts = _resource_inputs(access_key_id, secret_access_key, opts)
        props = {
            "bucket": bucket,
            "endpoint": endpoint,
            "region": region,
            **creds,
            "versioning": versioning,
            "noncurrentDays": noncurrent_days,
            "forceDestroy": force_destroy,
            "versioningStatus": None,
            "noncurrentDaysApplied": None,
            "publicAccessBlocked": None,
            "adopted": None,
        }
        super().__init__(BucketProvider(), name, props, opts)


# --------------------------------------------------------------------------- upload


UPLOAD_INPUTS = ("bucket", "endpoint", "region", "accessKeyId", "secretAccessKey", "source", "prefix", "fingerprint")


def local_files(source: str) -> list[tuple[str, Path, os.stat_result]]:
    """(posix relative path, path, stat) of every regular file under `source`, sorted."""
    root = Path(source).resolve()
    if not root.is_dir():
        raise S3Error(f"weight upload source {source!r} is not a directory (resolved to {root})")
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if path.is_file():
                out.append((path.relative_to(root).as_posix(), path, path.stat()))
    return out


def fingerprint(source: str) -> str:
    """Cheap tree fingerprint from names, sizes and modification times (no file is read).

    It only tells Pulumi that something may have changed; the upload itself compares
    content hashes, so a fingerprint change with equal content uploads nothing.
    """
    try:
        files = local_files(source)
    except S3Error:
        return "missing"
    h = hashlib.sha256()
    for rel, _, st in files:
        h.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(8 * 1024 * 1024):
            h.update(chunk)
    return h.hexdigest()


def manifest_key(prefix: str) -> str:
    # Outside the prefix, so Triton never sees it inside the model repository.
    return f"{MANIFEST_ROOT}/{prefix.strip('/')}.json"


def _read_manifest(s3, props, bucket: str, key: str) -> dict[str, Any]:
    from botocore.exceptions import ClientError

    try:
        body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    except ClientError as err:
        if _code(err) in ("NoSuchKey", "404") or _status(err) == 404:
            return {}
        raise explain(err, f"reading the upload manifest {key}", props["endpoint"]) from None
    try:
        return json.loads(body).get("files", {})
    except (ValueError, AttributeError):
        return {}


def _remote_sizes(s3, props, bucket: str, prefix: str) -> dict[str, int]:
    sizes: dict[str, int] = {}
    try:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix + "/"):
            for obj in page.get("Contents", []):
                sizes[obj["Key"]] = obj["Size"]
    except Exception as err:  # noqa: BLE001
        raise explain(err, f"listing {bucket}/{prefix}", props["endpoint"]) from None
    return sizes


def sync_tree(s3, props: dict[str, Any], workers: int = 8, verify: bool = False) -> dict[str, Any]:
    """Upload the files of `source` whose content differs from what the bucket holds under `prefix`.

    A file is hashed only when its size or modification time differs from the
    manifest (rsync's quick check); it is sent only when its hash differs from the
    manifest's, or, with `verify`, when the object is missing or of another size
    (one listing request per 1000 keys; `pulumi refresh` runs it, see `read`).
    Files removed locally are removed from the prefix (versioning keeps them until
    the lifecycle expires them). The manifest is written last, so an interrupted
    run is redone next time.
    """
    from boto3.s3.transfer import TransferConfig

    bucket, prefix = props["bucket"], props["prefix"].strip("/")
    files = local_files(props["source"])
    key = manifest_key(prefix)
    old = _read_manifest(s3, props, bucket, key)
    remote = _remote_sizes(s3, props, bucket, prefix) if verify else None

    def hash_of(item) -> str:
        rel, path, st = item
        entry = old.get(rel) or {}
        if entry.get("size") == st.st_size and entry.get("mtime_ns") == st.st_mtime_ns and entry.get("sha256"):
            return entry["sha256"]
        return sha256_file(path)

    with ThreadPoolExecutor(workers) as pool:
        hashes = list(pool.map(hash_of, files))
    new = {rel: {"sha256": h, "size": st.st_size, "mtime_ns": st.st_mtime_ns} for (rel, _, st), h in zip(files, hashes, strict=True)}
    todo = [
        (rel, path, new[rel]) for rel, path, st in files
        if (old.get(rel) or {}).get("sha256") != new[rel]["sha256"]
        or (remote is not None and remote.get(f"{prefix}/{rel}") != st.st_size)
    ]
    transfer = TransferConfig(multipart_threshold=MULTIPART_BYTES, multipart_chunksize=MULTIPART_BYTES,
                              max_concurrency=workers, use_threads=True)

    def send(item) -> int:
        rel, path, entry = item
        _call(props, f"uploading {rel} to {bucket}/{prefix}", s3.upload_file, str(path), bucket, f"{prefix}/{rel}",
              ExtraArgs={"Metadata": {"sha256": entry["sha256"]}}, Config=transfer)
        return entry["size"]

    # Large files parallelise inside TransferConfig; small ones across the pool.
    with ThreadPoolExecutor(workers) as pool:
        sent = sum(pool.map(send, todo))
    gone = sorted(f"{prefix}/{rel}" for rel in old if rel not in new and (remote is None or f"{prefix}/{rel}" in remote))
    for i in range(0, len(gone), 1000):
        _call(props, f"removing deleted files from {bucket}/{prefix}", s3.delete_objects, Bucket=bucket,
              Delete={"Objects": [{"Key": k} for k in gone[i:i + 1000]], "Quiet": True})
    if new != old:
        body = json.dumps({"files": new}, sort_keys=True).encode()
        _call(props, f"writing the upload manifest {key}", s3.put_object, Bucket=bucket, Key=key, Body=body,
              ContentType="application/json")
    tree = hashlib.sha256(json.dumps({k: v["sha256"] for k, v in new.items()}, sort_keys=True).encode()).hexdigest()
    return {
        "fileCount": len(files),
        "totalBytes": sum(st.st_size for _, _, st in files),
        "uploadedFiles": len(todo),
        "uploadedBytes": sent,
        "deletedFiles": len(gone),
        "contentSha256": tree,
    }


class UploadProvider(_S3Provider):
    """Syncs a local model repository to a bucket prefix. Stateless: see the module docstring."""

    def _more_failures(self, news: dict[str, Any]) -> list[CheckFailure]:
        source = news.get("source")
        if isinstance(source, str) and not Path(source).is_dir():
            return [CheckFailure("source", f"weight upload source {source!r} is not a directory (resolved to {Path(source).resolve()})")]
        return []

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = _changed(olds, news, UPLOAD_INPUTS)
        # Re-uploading to a new place is an update; the old objects stay (a running version may read them).
        return DiffResult(changes=bool(changed) or _has_unknowns(news), replaces=[], stables=[])

    def create(self, props: dict[str, Any]) -> CreateResult:
        props = {k: _plain(v) for k, v in props.items()}
        result = sync_tree(client(props), props)
        return CreateResult(f"{props['bucket']}/{props['prefix'].strip('/')}", {**props, **result})

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """Refresh: is every object of the manifest still in the bucket, at its size?"""
        props = {k: _plain(v) for k, v in props.items()}
        s3, prefix = client(props), props["prefix"].strip("/")
        manifest = _read_manifest(s3, props, props["bucket"], manifest_key(prefix))
        remote = _remote_sizes(s3, props, props["bucket"], prefix)
        drift = not manifest or any(remote.get(f"{prefix}/{rel}") != e.get("size") for rel, e in manifest.items())
        if not drift:
            return ReadResult(id_, props)
        # A changed input makes the next `pulumi up` update, and the update then verifies.
        inputs = {k: props[k] for k in UPLOAD_INPUTS if k in props} | {"fingerprint": "drifted"}
        return ReadResult(id_, {**props, "fingerprint": "drifted"}, inputs)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        news = {k: _plain(v) for k, v in news.items()}
        verify = olds.get("fingerprint") == "drifted"
        return UpdateResult({**news, **sync_tree(client(news), news, verify=verify)})

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        # Uploaded weights outlive the upload resource: a running version may still read them.
        return None


class WeightUpload(pulumi.dynamic.Resource, module="s3", name="Upload"):
    """A local model repository kept in sync with a bucket prefix by content hash."""

    # Outputs: fileCount, totalBytes, uploadedFiles, uploadedBytes, deletedFiles, contentSha256.

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
        opts: Optional[pulumi.ResourceOptions] = None,
    ):
        creds, opts = _resource_inputs(access_key_id, secret_access_key, opts)
        props = {
            "bucket": bucket,
            "endpoint": endpoint,
            "region": region,
            **creds,
            "source": source,
            "prefix": prefix,
            "fingerprint": fingerprint(source),
            "fileCount": None,
            "totalBytes": None,
            "uploadedFiles": None,
            "uploadedBytes": None,
            "deletedFiles": None,
            "contentSha256": None,
        }
        super().__init__(UploadProvider(), name, props, opts)
