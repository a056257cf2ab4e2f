"""Dynamic providers (boto3) for an S3-compatible weight bucket and weight uploads.

Pulumi runs a dynamic provider in a separate process: it serialises the provider
object with dill into the resource's ``__provider`` input and loads it there. So the
provider objects here hold no state at all (no client, lock or credential): every
call builds its own client from the resource's properties, where the credentials
arrive as secret inputs. The classes are pickled by reference, so the provider
process (started in the project directory) imports this module; it must stay free
of side effects at import time.

- ``BucketProvider``: a bucket with versioning, a lifecycle rule expiring
  noncurrent versions, Object Ownership ``BucketOwnerEnforced`` (ACLs disabled, as
  AWS creates buckets since April 2023; no ACL is ever written), and public access
  blocked. Settings a server does not implement are skipped (SeaweedFS has no public
  access block). An existing bucket of ours is adopted only with ``adopt``, and an
  adopted bucket is never emptied or deleted: on delete it is only forgotten. One
  owned by someone else is an error. Settings change in place; only a new bucket
  name or endpoint replaces it. A non-empty bucket is deleted only with
  ``forceDestroy``.
- Checksums: botocore (>= 1.36) puts a CRC32 header, not Content-MD5, on the
  operations the S3 API requires a checksum for (DeleteObjects, the bucket
  configuration PUTs); servers that predate flexible checksums refuse those. The
  client sends Content-MD5 there instead, and on every object and part it uploads
  (AWS and SeaweedFS refuse a body that does not match it); botocore adds no other
  checksum.
- ``UploadProvider``: syncs a local model repository to a key prefix by content
  hash (sha256, kept in object metadata and in a manifest object outside the
  prefix): unchanged files are not sent, large files go in multipart. It never
  loses data: the source is listed and hashed completely before the bucket is
  touched; the manifest only claims what the bucket holds (keys being changed are
  marked pending first); every object records the sha256 of exactly the bytes it
  received, and a file that changes while it is sent is sent again once or fails
  the update; deletions come last, only for keys the manifest recorded. `up`
  trusts the manifest; refresh verifies every object's content and reports a
  missing object or bucket as drift. See ``sync_tree`` and ``audit``. Files the
  program generates from the source (tuning presets' config variants, input
  ``generated``) are synced with the source's under the same rules: checked
  before the bucket is touched, recorded in the manifest, deleted when dropped.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import re
import stat
import threading
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
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
    """A failure of a bucket or upload operation, phrased in one line for the person running `pulumi up`."""


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
        # Path-style addressing works on every S3-compatible server. Checksums: see the module docstring
        # (botocore's default, when_supported, would add CRC32 to every upload; not every server knows it).
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
        s3 = session.client("s3", endpoint_url=endpoint, config=config)
    except ValueError as err:
        raise S3Error(f"endpoint {endpoint!r} is not usable: {err}") from None
    s3.meta.events.register("before-sign.s3", md5_instead_of_flexible_checksum)
    return s3


def content_md5(body: bytes) -> str:
    """The Content-MD5 header value of `body`."""
    return base64.b64encode(hashlib.md5(body, usedforsecurity=False).digest()).decode()


FLEXIBLE_CHECKSUM_HEADERS = ("x-amz-checksum-", "x-amz-sdk-checksum-algorithm")


def md5_instead_of_flexible_checksum(request, **_) -> None:
    """Before signing: where botocore put a flexible checksum on a body in memory, send Content-MD5 instead.

    With ``request_checksum_calculation="when_required"`` botocore adds one only where
    the API requires a checksum; AWS accepts Content-MD5 there, and so does every
    server that predates flexible checksums (which refuse CRC32 alone).
    """
    flexible = [name for name in request.headers.keys() if name.lower().startswith(FLEXIBLE_CHECKSUM_HEADERS)]
    if not flexible or not isinstance(request.body, (bytes, bytearray)):
        return
    for name in flexible + ["Content-MD5"]:
        del request.headers[name]  # removes every copy; setting would add another
    request.headers["Content-MD5"] = content_md5(bytes(request.body))


def _code(err: Exception) -> str:
    return str(getattr(err, "response", {}).get("Error", {}).get("Code", ""))


def _status(err: Exception) -> int:
    return int(getattr(err, "response", {}).get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)


def explain(err: Exception, what: str, endpoint: str) -> S3Error:
    """Turn a botocore error into one clear sentence, on one line."""
    if isinstance(err, S3Error):
        return err
    return S3Error(" ".join(_explanation(err, what, endpoint).split()))


def _explanation(err: Exception, what: str, endpoint: str) -> str:
    from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError

    if isinstance(err, EndpointConnectionError):
        return f"{what}: cannot reach the S3 endpoint {endpoint} ({err})"
    if isinstance(err, ClientError):
        code, status = _code(err), _status(err)
        message = err.response.get("Error", {}).get("Message", "")
        if code in CREDENTIAL_CODES or status == 403:
            return (
                f"{what}: the S3 endpoint {endpoint} refused the credentials ({code or status}: {message}); "
                "check the secrets inference-platform:s3AccessKeyId and s3SecretAccessKey"
            )
        return f"{what}: {code or status}: {message}".rstrip(": ")
    if isinstance(err, BotoCoreError):
        return f"{what}: S3 endpoint {endpoint}: {err}"
    return f"{what}: {type(err).__name__}: {err}"


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


BUCKET_INPUTS = ("bucket", "endpoint", "region", "accessKeyId", "secretAccessKey", "versioning", "noncurrentDays",
                 "forceDestroy", "adopt")
OBJECT_OWNERSHIP = "BucketOwnerEnforced"
PUBLIC_GROUPS = frozenset({
    "http://acs.amazonaws.com/groups/global/AllUsers",
    "http://acs.amazonaws.com/groups/global/AuthenticatedUsers",
})
PUBLIC_ACCESS_BLOCK = ("BlockPublicAcls", "IgnorePublicAcls", "BlockPublicPolicy", "RestrictPublicBuckets")


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


def public_acl_grants(s3, props: dict[str, Any]) -> list[str]:
    """What the bucket's ACL grants to everyone or to any authenticated user, e.g. ["READ to AllUsers"].

    Only read: a server without ownership controls or a public access block (or one
    that evaluates ACLs whatever the ownership setting, as SeaweedFS does) would serve
    such a bucket to anyone.
    """
    from botocore.exceptions import ClientError

    bucket = props["bucket"]
    try:
        grants = s3.get_bucket_acl(Bucket=bucket).get("Grants", [])
    except ClientError as err:
        if _unsupported(err):
            return []
        raise explain(err, f"reading the ACL of bucket {bucket}", props["endpoint"]) from None
    except Exception as err:  # noqa: BLE001
        raise explain(err, f"reading the ACL of bucket {bucket}", props["endpoint"]) from None
    return sorted({f"{g.get('Permission')} to {g['Grantee']['URI'].rsplit('/', 1)[-1]}"
                   for g in grants if g.get("Grantee", {}).get("URI") in PUBLIC_GROUPS})


def _refuse_public_acl(s3, props: dict[str, Any]) -> None:
    public = public_acl_grants(s3, props)
    if public:
        raise S3Error(f"bucket {props['bucket']} is public through its ACL ({', '.join(public)}); nothing was changed. "
                      "This stack never writes ACLs: remove those grants (e.g. `aws s3api put-bucket-acl --acl private`) "
                      "and run `pulumi up` again")


def _enforce_bucket_owner(s3, props: dict[str, Any]) -> None:
    """Object Ownership BucketOwnerEnforced: ACLs off, every object the bucket owner's (where the server has it)."""
    from botocore.exceptions import ClientError

    bucket = props["bucket"]
    try:
        s3.put_bucket_ownership_controls(Bucket=bucket, OwnershipControls={"Rules": [{"ObjectOwnership": OBJECT_OWNERSHIP}]})
    except ClientError as err:
        if _code(err) == "InvalidBucketAclWithObjectOwnership":
            raise S3Error(f"bucket {bucket}: its ACL grants access to others, so ACLs cannot be disabled "
                          f"(ObjectOwnership {OBJECT_OWNERSHIP}); move those grants to a bucket policy, reset the ACL to "
                          "private and run `pulumi up` again") from None
        if not _unsupported(err):
            raise explain(err, f"enforcing bucket-owner object ownership on bucket {bucket}", props["endpoint"]) from None


def _block_public_access(s3, props: dict[str, Any]) -> None:
    from botocore.exceptions import ClientError

    bucket = props["bucket"]
    try:
        s3.put_public_access_block(Bucket=bucket, PublicAccessBlockConfiguration=dict.fromkeys(PUBLIC_ACCESS_BLOCK, True))
    except ClientError as err:
        if not _unsupported(err):
            raise explain(err, f"blocking public access to bucket {bucket}", props["endpoint"]) from None


def configure_bucket(s3, props: dict[str, Any]) -> dict[str, Any]:
    """Apply ownership, versioning, lifecycle and public-access settings; return what the server now reports.

    A bucket public through its ACL is refused before anything changes.
    """
    bucket = props["bucket"]
    _refuse_public_acl(s3, props)
    _enforce_bucket_owner(s3, props)
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
    _block_public_access(s3, props)
    return observe_bucket(s3, props)


def _object_ownership(s3, props: dict[str, Any]) -> Optional[str]:
    from botocore.exceptions import ClientError

    bucket = props["bucket"]
    try:
        rules = s3.get_bucket_ownership_controls(Bucket=bucket)["OwnershipControls"]["Rules"]
    except ClientError as err:
        if _code(err) == "OwnershipControlsNotFoundError" or _unsupported(err):
            return None
        raise explain(err, f"reading the object ownership of bucket {bucket}", props["endpoint"]) from None
    return rules[0].get("ObjectOwnership") if rules else None


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
        blocked = all(block.get(k) for k in PUBLIC_ACCESS_BLOCK)
    except ClientError as err:
        if _code(err) != "NoSuchPublicAccessBlockConfiguration" and not _unsupported(err):
            raise explain(err, f"reading the public access block of bucket {bucket}", props["endpoint"]) from None
    return {
        "versioningStatus": status or "Off",
        "noncurrentDaysApplied": days,
        # None: the server has no public access block; then no public ACL grant was found instead.
        "publicAccessBlocked": blocked,
        # None: the server has no ownership controls.
        "objectOwnership": _object_ownership(s3, props),
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


def _exists(s3, props: dict[str, Any], foreign: S3Error) -> bool:
    """Whether the bucket exists (and is open to us); `foreign` when it exists but is closed to us."""
    from botocore.exceptions import ClientError

    bucket, endpoint = props["bucket"], props["endpoint"]
    try:
        s3.head_bucket(Bucket=bucket)
        return True
    except ClientError as err:
        if _status(err) == 404 or _code(err) in ("404", "NoSuchBucket", "NotFound"):
            return False
        if _status(err) == 403 and _owned_bucket_names(s3, props, bucket) is not None:
            # Our credentials work (the listing succeeded) but this bucket is closed to us.
            raise foreign from None
        raise explain(err, f"looking up bucket {bucket}", endpoint) from None
    except Exception as err:  # noqa: BLE001
        raise explain(err, f"looking up bucket {bucket}", endpoint) from None


def _adopt(props: dict[str, Any]) -> bool:
    """True (adopted) when the stack says `adopt`; else the one-line refusal."""
    if props.get("adopt"):
        return True
    raise S3Error(f"bucket {props['bucket']} already exists at {props['endpoint']} and is ours; it may hold data from "
                  "before this stack, so it is used only when adopted explicitly: set weightCaches.s3.adopt: true "
                  "(an adopted bucket is never emptied or deleted by the stack)")


def create_or_adopt(s3, props: dict[str, Any]) -> bool:
    """Create the bucket, or adopt it when it exists, is ours and `adopt` is set; True when adopted.

    A bucket that exists but is not in our own bucket listing belongs to someone
    else (even if they let us read it) and is refused.
    """
    from botocore.exceptions import ClientError

    bucket, region, endpoint = props["bucket"], props.get("region") or "us-east-1", props["endpoint"]
    foreign = S3Error(f"bucket {bucket} already exists at {endpoint} and belongs to another account; "
                      "choose another weightCaches.s3.bucket")
    if _exists(s3, props, foreign):
        if bucket in _owned_bucket_names(s3, props, bucket):
            return _adopt(props)
        raise foreign
    kwargs: dict[str, Any] = {"Bucket": bucket}
    if region != "us-east-1":
        kwargs["CreateBucketConfiguration"] = {"LocationConstraint": region}
    try:
        s3.create_bucket(**kwargs)
        return False
    except ClientError as err:
        if _code(err) == "BucketAlreadyOwnedByYou":
            return _adopt(props)
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


def _remove_new_bucket(s3, props: dict[str, Any]) -> None:
    """Delete a bucket created a moment ago, if it is still empty; failures are left to the next `up`."""
    try:
        listing = s3.list_object_versions(Bucket=props["bucket"], MaxKeys=1)
        if not (listing.get("Versions") or listing.get("DeleteMarkers")):
            s3.delete_bucket(Bucket=props["bucket"])
    except Exception:  # noqa: BLE001 - the error being raised is the one to report
        pass


class BucketProvider(_S3Provider):
    """CRUD of one S3-compatible bucket. Stateless: see the module docstring."""

    def _more_failures(self, news: dict[str, Any]) -> list[CheckFailure]:
        failures = []
        days = news.get("noncurrentDays")
        if isinstance(days, (int, float)) and not 1 <= days <= 3650:
            failures.append(CheckFailure("noncurrentDays", f"noncurrentDays is {days}; allowed: 1-3650"))
        if news.get("adopt") is True and news.get("forceDestroy") is True:
            failures.append(CheckFailure("forceDestroy", "forceDestroy is not allowed with adopt: an adopted bucket "
                                                         "held data before this stack and is never emptied"))
        return failures

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        # A state written before `adopt` existed holds no such input: it was false.
        changed = _changed({"adopt": False, **olds}, news, BUCKET_INPUTS)
        replaces = [k for k in ("bucket", "endpoint") if k in changed and not _has_unknowns({k: news.get(k)})]
        return DiffResult(changes=bool(changed) or _has_unknowns(news), replaces=replaces, stables=[],
                          delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        props = {k: _plain(v) for k, v in props.items()}
        s3 = client(props)
        adopted = create_or_adopt(s3, props)
        try:
            observed = configure_bucket(s3, props)
        except S3Error:
            if not adopted:
                # A failed create leaves no state: without this, the next `up` would find the bucket and ask to adopt it.
                _remove_new_bucket(s3, props)
            raise
        return CreateResult(props["bucket"], {**props, **observed, "adopted": adopted})

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
        if props.get("adopted"):
            # It held data before this stack: the stack forgets it and leaves every object where it is.
            return
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
    """An S3-compatible bucket: versioned, noncurrent versions expiring, ACLs disabled, public access refused."""

    # Outputs are attributes named like the properties: bucket, versioningStatus, objectOwnership, adopted, ...
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
        adopt: bool = False,
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
            "adopt": adopt,
            "versioningStatus": None,
            "noncurrentDaysApplied": None,
            "publicAccessBlocked": None,
            "objectOwnership": None,
            "adopted": None,
        }
        super().__init__(BucketProvider(), name, props, opts)


# --------------------------------------------------------------------------- upload


UPLOAD_INPUTS = ("bucket", "endpoint", "region", "accessKeyId", "secretAccessKey", "source", "prefix", "fingerprint",
                 "generated")
# Generated files are tuning presets' config variants: `<model>/configs/<preset>.pbtxt`, where
# Triton's --model-config-name looks for them.
GENERATED_KEY = re.compile(r"[^/]+/configs/[^/]+\.pbtxt")
READ_CHUNK = 8 * 1024 * 1024
MAX_PARTS = 10_000
DRIFTED = "drifted"
KMS_ENCRYPTION = frozenset({"aws:kms", "aws:kms:dsse"})


class SourceError(S3Error):
    """The local model repository cannot be read as a whole (or changed while it was read or sent)."""


class BucketMissing(S3Error):
    """The bucket an upload writes to does not exist."""


@dataclass(frozen=True)
class LocalFile:
    rel: str  # path below the source, with "/": the key below the prefix
    path: Path
    stat: os.stat_result  # of the file itself: a symlink is followed


@dataclass(frozen=True)
class GeneratedFile:
    """A file the program rendered (a tuning preset's config variant), uploaded beside the source's files."""

    rel: str
    body: bytes

    @property
    def entry(self) -> dict[str, Any]:
        """Its manifest entry: content only, as it has no times of its own."""
        return {"sha256": hashlib.sha256(self.body).hexdigest(), "size": len(self.body),
                "md5": hashlib.md5(self.body, usedforsecurity=False).hexdigest()}


def _identity(st: os.stat_result) -> tuple[int, ...]:
    # Every write, rename or utime sets ctime, which no user can set back: an unchanged identity is an unchanged file.
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _stat_fields(st: os.stat_result) -> dict[str, int]:
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns}


def _shown(path: Any) -> str:
    # A file name that is not UTF-8 must still print.
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _unreadable(action: str, path: Any, err: OSError) -> SourceError:
    return SourceError(f"weight upload: cannot {action} {_shown(path)} ({err.strerror or err})")


def _kind(mode: int) -> str:
    kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"))
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def _not_a_file(path: Any, mode: int) -> SourceError:
    return SourceError(f"weight upload: {_shown(path)} is {_kind(mode)}; only regular files are uploaded, remove it from the source")


def _entries(directory: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(directory) as it:
            return list(it)
    except OSError as err:
        raise _unreadable("list directory", directory, err) from None


def _relative_key(root: Path, path: Path) -> str:
    rel = path.relative_to(root).as_posix()
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        raise SourceError(f"weight upload: the name of {_shown(path)} is not UTF-8, so it cannot be an S3 key; rename it") from None
    return rel


def _refuse_broken_configs(source: str) -> None:
    """A model repository whose config.pbtxt Triton would refuse is not uploaded at all."""
    from inference_platform.serving.model_config import broken_repository_configs

    broken = broken_repository_configs(source)
    if broken:
        raise SourceError(f"weight upload source {source!r}: {broken[0]}"
                          + (f" (and {len(broken) - 1} more)" if len(broken) > 1 else "") + "; nothing was uploaded")


def generated_key_problem(rel: Any) -> Optional[str]:
    """Why `rel` cannot be the key of a generated file below the prefix, or None."""
    if not isinstance(rel, str) or not GENERATED_KEY.fullmatch(rel) or rel.split("/")[0] in (".", ".."):
        return f"generated file {rel!r} is not <model>/configs/<name>.pbtxt"
    return None


def generated_files(generated: dict[str, str], files: list[LocalFile]) -> list[GeneratedFile]:
    """The generated files, checked against the source listing, or SourceError: each is a config
    variant of a model the source holds (its `<model>/config.pbtxt`), no source file has its key,
    and Triton's model config parses it."""
    from inference_platform.serving.model_config import CONFIG_FILE, ModelConfigError, parse_model_config

    listed = {f.rel for f in files}
    found = []
    for rel, text in sorted(generated.items()):
        problem = generated_key_problem(rel)
        if problem:
            raise SourceError(f"weight upload: {problem}")
        model = rel.split("/")[0]
        if f"{model}/{CONFIG_FILE}" not in listed:
            raise SourceError(f"weight upload: generated {rel} is a variant of {model}/{CONFIG_FILE}, which the source "
                              "does not hold (the source changed since the plan?); run `pulumi up` again")
        if rel in listed:
            raise SourceError(f"weight upload: {rel} is both a file of the source and generated from a tuning preset; "
                              "remove it from the source or the preset from the upload")
        try:
            parse_model_config(text, f"generated {rel}")
        except ModelConfigError as err:
            raise SourceError(f"weight upload: {err}") from None
        found.append(GeneratedFile(rel, text.encode("utf-8")))
    return found


def local_files(source: str) -> list[LocalFile]:
    """Every file under `source`, sorted by relative path: the complete listing, or SourceError.

    Nothing is skipped silently, because deletions are computed from this listing: a
    directory that cannot be listed, a file that cannot be looked at or a name that is
    not UTF-8 fails it. Symlinks to files are followed wherever they point (a Hugging
    Face snapshot links every file into ../../blobs) and their content is uploaded;
    symlinks to directories are refused (a loop, or a whole other tree). FIFOs, sockets
    and devices are refused rather than read (reading a FIFO blocks forever).
    """
    root = Path(source).resolve()
    try:
        root_is_dir = stat.S_ISDIR(os.stat(root).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        root_is_dir = False
    except OSError as err:
        raise _unreadable("read the weight upload source", root, err) from None
    if not root_is_dir:
        raise SourceError(f"weight upload source {source!r} is not a directory (resolved to {root})")
    files, directories = [], [root]
    while directories:
        for entry in _entries(directories.pop()):
            path = Path(entry.path)
            try:
                link, st = entry.is_symlink(), os.stat(path)
            except OSError as err:
                raise _unreadable("read", path, err) from None
            if stat.S_ISDIR(st.st_mode):
                if link:
                    raise SourceError(f"weight upload: {_shown(path)} is a symlink to a directory, which is not followed; "
                                      "link the files one by one, or copy the directory")
                directories.append(path)
            elif stat.S_ISREG(st.st_mode):
                files.append(LocalFile(_relative_key(root, path), path, st))
            else:
                raise _not_a_file(path, st.st_mode)
    return sorted(files, key=lambda f: f.rel)


def fingerprint(source: str) -> str:
    """Cheap tree fingerprint from names, sizes and times (no file is read).

    It only tells Pulumi that something may have changed; the upload itself compares
    content hashes, so a fingerprint change with equal content uploads nothing. A tree
    that cannot be listed gets a fingerprint of its own, so the update runs and reports why.
    """
    if not Path(source).is_dir():
        return "missing"
    try:
        files = local_files(source)
    except SourceError:
        return "unreadable"
    h = hashlib.sha256()
    for f in files:
        h.update(f"{f.rel}\0{f.stat.st_size}\0{f.stat.st_mtime_ns}\0{f.stat.st_ctime_ns}\n".encode())
    return h.hexdigest()


@contextlib.contextmanager
def _open_regular(path: Path):
    """The open file and its stat. O_NONBLOCK: a FIFO swapped in since the listing must not block the open."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        raise _unreadable("read", path, err) from None
    with os.fdopen(fd, "rb") as f:
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise _not_a_file(path, st.st_mode)
            os.set_blocking(fd, True)
            yield f, st
        except OSError as err:
            raise _unreadable("read", path, err) from None


def _changed_error(path: Path, doing: str) -> SourceError:
    return SourceError(f"weight upload: {_shown(path)} changed while it was {doing}, twice; "
                       "stop writing to it (or upload a finished copy) and run `pulumi up` again")


def hash_file(path: Path) -> tuple[str, os.stat_result]:
    """sha256 of a file and the stat it kept for the whole read (read again once if it changed meanwhile)."""
    for _ in range(2):
        with _open_regular(path) as (f, before):
            h = hashlib.sha256()
            while chunk := f.read(READ_CHUNK):
                h.update(chunk)
            after = os.fstat(f.fileno())
        if _identity(before) == _identity(after):
            return h.hexdigest(), after
    raise _changed_error(path, "read")


def _parallel(fn, items, workers: int) -> list:
    """fn over items on a thread pool, results in order; the first failure cancels what has not started, then is raised."""
    items = list(items)
    if not items:
        return []
    with ThreadPoolExecutor(min(workers, len(items))) as pool:
        futures = [pool.submit(fn, item) for item in items]
        _, not_done = wait(futures, return_when=FIRST_EXCEPTION)
        for future in not_done:
            future.cancel()
    failed = [f.exception() for f in futures if not f.cancelled() and f.exception() is not None]
    if failed:
        raise failed[0]
    return [f.result() for f in futures]


# The manifest: the upload's record in the bucket of what each key holds.


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
class _Target:
    """Where an upload goes: client, bucket and prefix, and the endpoint for error messages."""

    s3: Any
    props: dict[str, Any]
    bucket: str
    prefix: str

    @classmethod
    def of(cls, s3, props: dict[str, Any]) -> _Target:
        return cls(s3, props, props["bucket"], props["prefix"].strip("/"))

    def key(self, rel: str) -> str:
        return f"{self.prefix}/{rel}"

    @property
    def manifest(self) -> str:
        return manifest_key(self.prefix)

    def call(self, what: str, fn, **kwargs):
        return _call(self.props, what, fn, **kwargs)

    def missing_bucket(self) -> BucketMissing:
        return BucketMissing(f"bucket {self.bucket} does not exist at {self.props['endpoint']} (deleted outside Pulumi?); "
                             "`pulumi refresh` then `pulumi up` recreates it and uploads again")


def _read_manifest(target: _Target) -> Manifest:
    from botocore.exceptions import ClientError

    try:
        body = target.s3.get_object(Bucket=target.bucket, Key=target.manifest)["Body"].read()
    except ClientError as err:
        if _code(err) == "NoSuchBucket":
            raise target.missing_bucket() from None
        if _code(err) in ("NoSuchKey", "404") or _status(err) == 404:
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


def _write_manifest(target: _Target, files: dict[str, dict[str, Any]], pending: frozenset[str] = frozenset()) -> None:
    record: dict[str, Any] = {"files": files}
    if pending:
        record["pending"] = sorted(pending)
    body = json.dumps(record, sort_keys=True).encode()
    target.call(f"writing the upload manifest {target.manifest}", target.s3.put_object, Bucket=target.bucket,
                Key=target.manifest, Body=body, ContentType="application/json", ContentMD5=content_md5(body))


# What the bucket holds.


def _listing(target: _Target) -> dict[str, int]:
    """Size per key under the prefix (one request per 1000 keys)."""
    from botocore.exceptions import ClientError

    sizes: dict[str, int] = {}
    try:
        for page in target.s3.get_paginator("list_objects_v2").paginate(Bucket=target.bucket, Prefix=target.prefix + "/"):
            for obj in page.get("Contents", []):
                sizes[obj["Key"]] = obj["Size"]
    except ClientError as err:
        if _code(err) == "NoSuchBucket":
            raise target.missing_bucket() from None
        raise explain(err, f"listing {target.bucket}/{target.prefix}", target.props["endpoint"]) from None
    except Exception as err:  # noqa: BLE001
        raise explain(err, f"listing {target.bucket}/{target.prefix}", target.props["endpoint"]) from None
    return sizes


def _head(target: _Target, rel: str) -> Optional[dict[str, Any]]:
    """The object's HEAD response, or None when it (or its bucket) is gone."""
    from botocore.exceptions import ClientError

    key = target.key(rel)
    try:
        return target.s3.head_object(Bucket=target.bucket, Key=key)
    except ClientError as err:
        if _status(err) == 404 or _code(err) in ("404", "NoSuchKey", "NotFound", "NoSuchBucket"):
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


def _content_outputs(files: dict[str, dict[str, Any]]) -> dict[str, Any]:
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
    target = _Target.of(s3, props)
    try:
        manifest = _read_manifest(target)
    except BucketMissing:
        return {}, [f"bucket {target.bucket} does not exist"]
    problems = []
    if not manifest.found:
        problems.append(f"the upload manifest {target.manifest} is missing or unreadable")
    if manifest.pending:
        problems.append(f"an update did not finish ({len(manifest.pending)} files pending)")
    rels = sorted(manifest.files)
    heads = _parallel(lambda rel: _head(target, rel), rels, workers)
    missing = [rel for rel, head in zip(rels, heads, strict=True) if head is None]
    other = [rel for rel, head in zip(rels, heads, strict=True) if head is not None and not holds(head, manifest.files[rel])]
    if missing:
        problems.append(f"{len(missing)} missing ({_some(missing)})")
    if other:
        problems.append(f"{len(other)} with other content ({_some(other)})")
    verified = {rel: manifest.files[rel] for rel in rels if rel not in missing and rel not in other}
    return verified, problems


# Sending.


def _settled(path: Path, before: os.stat_result, sha: str) -> Optional[os.stat_result]:
    """The file's stat if it still holds the content that was sent (`sha`), else None."""
    try:
        now = os.stat(path)
    except OSError:
        return None
    if _identity(now) == _identity(before):
        return now
    if not stat.S_ISREG(now.st_mode):
        return None
    try:
        again, st = hash_file(path)
    except SourceError:
        return None
    return st if again == sha else None


def _send_small(target: _Target, f: LocalFile) -> dict[str, Any]:
    """One PUT of the bytes read, with their sha256; sent again once if the file changed meanwhile."""
    for _ in range(2):
        with _open_regular(f.path) as (fh, before):
            if before.st_size >= MULTIPART_BYTES:
                continue  # grew since it was hashed: changed
            body = fh.read(MULTIPART_BYTES)
        sha = hashlib.sha256(body).hexdigest()
        md5 = hashlib.md5(body, usedforsecurity=False)
        # Content-MD5: the server refuses the object unless it received exactly these bytes.
        target.call(f"uploading {f.path} to {target.bucket}/{target.key(f.rel)}", target.s3.put_object,
                    Bucket=target.bucket, Key=target.key(f.rel), Body=body, Metadata={"sha256": sha},
                    ContentMD5=base64.b64encode(md5.digest()).decode())
        settled = _settled(f.path, before, sha)
        if settled is not None:
            return {"sha256": sha, **_stat_fields(settled), "md5": md5.hexdigest()}
    raise _changed_error(f.path, "uploaded")


def _send_parts(target: _Target, f: LocalFile, upload_id: str, workers: int) -> tuple[str, os.stat_result, list[dict]]:
    """Read the file once, in order, hashing what is sent; at most `workers` parts in memory and in flight."""
    key = target.key(f.rel)
    h, slots, failed, futures = hashlib.sha256(), threading.BoundedSemaphore(workers), threading.Event(), []

    def part(number: int, chunk: bytes) -> dict[str, Any]:
        try:
            response = target.call(f"uploading part {number} of {f.path} to {target.bucket}/{key}", target.s3.upload_part,
                                   Bucket=target.bucket, Key=key, UploadId=upload_id, PartNumber=number, Body=chunk,
                                   ContentMD5=content_md5(chunk))
        except BaseException:
            failed.set()
            raise
        finally:
            slots.release()
        return {"PartNumber": number, "ETag": response["ETag"]}

    with ThreadPoolExecutor(workers) as pool, _open_regular(f.path) as (fh, before):
        part_size = max(MULTIPART_BYTES, -(-before.st_size // MAX_PARTS))
        while not failed.is_set() and (chunk := fh.read(part_size)):
            h.update(chunk)
            slots.acquire()
            futures.append(pool.submit(part, len(futures) + 1, chunk))
        wait(futures, return_when=FIRST_EXCEPTION)
        for future in futures:
            future.cancel()
    return h.hexdigest(), before, [future.result() for future in futures]


def _abort_quietly(target: _Target, key: str, upload_id: str) -> None:
    try:
        target.s3.abort_multipart_upload(Bucket=target.bucket, Key=key, UploadId=upload_id)
    except Exception:  # noqa: BLE001 - the server may be gone; the lifecycle rule removes the parts after 7 days
        pass


def _send_large(target: _Target, f: LocalFile, sha: Optional[str], workers: int) -> dict[str, Any]:
    """Multipart, declaring `sha` (hashed before); completed only when the bytes sent hash to it."""
    key = target.key(f.rel)
    for _ in range(2):
        if sha is None:
            sha, st = hash_file(f.path)
            if st.st_size < MULTIPART_BYTES:
                return _send_small(target, f)  # rewritten smaller: one PUT
        started = target.call(f"starting the upload of {f.path} to {target.bucket}/{key}", target.s3.create_multipart_upload,
                              Bucket=target.bucket, Key=key, Metadata={"sha256": sha})
        try:
            sent, before, parts = _send_parts(target, f, started["UploadId"], workers)
            if sent != sha or before.st_size < MULTIPART_BYTES:
                # Changed since it was hashed: the object would not hold what its metadata says.
                # (Below the threshold the parts could be too small; the next attempt sends it in one PUT.)
                _abort_quietly(target, key, started["UploadId"])
                sha = None
                continue
            target.call(f"finishing the upload of {f.path} to {target.bucket}/{key}", target.s3.complete_multipart_upload,
                        Bucket=target.bucket, Key=key, UploadId=started["UploadId"], MultipartUpload={"Parts": parts})
        except BaseException:
            _abort_quietly(target, key, started["UploadId"])
            raise
        settled = _settled(f.path, before, sent)
        if settled is not None:
            return {"sha256": sent, **_stat_fields(settled)}
        sha = None
    raise _changed_error(f.path, "uploaded")


def _send_generated(target: _Target, g: GeneratedFile) -> dict[str, Any]:
    """One PUT of a generated file: its bytes are in memory, so they cannot change while sent."""
    entry = g.entry
    target.call(f"uploading the generated {g.rel} to {target.bucket}/{target.key(g.rel)}", target.s3.put_object,
                Bucket=target.bucket, Key=target.key(g.rel), Body=g.body, Metadata={"sha256": entry["sha256"]},
                ContentMD5=content_md5(g.body))
    return entry


def _send_one(target: _Target, f: LocalFile | GeneratedFile) -> dict[str, Any]:
    return _send_generated(target, f) if isinstance(f, GeneratedFile) else _send_small(target, f)


def _send_all(target: _Target, todo: list[LocalFile | GeneratedFile], local: dict[str, dict[str, Any]],
              workers: int) -> dict[str, dict[str, Any]]:
    """Send every file; the manifest entry of each, describing exactly the bytes the bucket received."""
    multipart = {f.rel for f in todo if isinstance(f, LocalFile) and local[f.rel]["size"] >= MULTIPART_BYTES}
    small = [f for f in todo if f.rel not in multipart]
    large = [f for f in todo if f.rel in multipart]
    # Small files in parallel; large ones one at a time with their parts in parallel (bounded memory).
    sent = dict(zip([f.rel for f in small], _parallel(lambda f: _send_one(target, f), small, workers), strict=True))
    for f in large:
        sent[f.rel] = _send_large(target, f, local[f.rel]["sha256"], workers)
    return sent


def _delete(target: _Target, rels: list[str]) -> None:
    keys = [target.key(rel) for rel in rels]
    for i in range(0, len(keys), 1000):
        result = target.call(f"removing deleted files from {target.bucket}/{target.prefix}", target.s3.delete_objects,
                             Bucket=target.bucket, Delete={"Objects": [{"Key": k} for k in keys[i:i + 1000]], "Quiet": True})
        if result.get("Errors"):
            first = result["Errors"][0]
            raise S3Error(f"removing {target.bucket}/{first.get('Key')}: {first.get('Code')}: {first.get('Message')}")


# The sync.


def _local_entry(f: LocalFile, known: Optional[dict[str, Any]]) -> dict[str, Any]:
    """The file's manifest entry: the known one when size and times match (rsync's quick check), else hashed."""
    if known and known.get("sha256") and all(known.get(k) == v for k, v in _stat_fields(f.stat).items()):
        return known
    sha, st = hash_file(f.path)
    md5 = {"md5": known["md5"]} if known and known.get("sha256") == sha and known.get("md5") else {}
    return {"sha256": sha, **_stat_fields(st), **md5}


@contextlib.contextmanager
def _nothing_changed_yet():
    try:
        yield
    except SourceError as err:
        raise SourceError(f"{err}; nothing in the bucket was changed") from None


def _hash_source(files: list[LocalFile], old: Manifest, workers: int) -> dict[str, dict[str, Any]]:
    """Every file's entry, or SourceError: the bucket is not touched before this succeeds."""
    entries = _parallel(lambda f: _local_entry(f, old.files.get(f.rel)), files, workers)
    return dict(zip([f.rel for f in files], entries, strict=True))


def _held(target: _Target, rels: list[str], local: dict[str, dict[str, Any]], listing: dict[str, int], workers: int) -> set[str]:
    """Of `rels`, those whose object already holds the local content (listed at that size, then `holds`)."""
    candidates = [rel for rel in rels if listing.get(target.key(rel)) == local[rel]["size"]]
    heads = _parallel(lambda rel: _head(target, rel), candidates, workers)
    return {rel for rel, head in zip(candidates, heads, strict=True) if head is not None and holds(head, local[rel])}


def sync_tree(s3, props: dict[str, Any], workers: int = 8, verify: bool = False) -> dict[str, Any]:
    """Make `prefix` hold exactly the files of `source` and the `generated` ones, by content
    hash; never lose an object the source holds.

    1. List and hash the source completely (a file is hashed only when its size or
       times differ from the manifest) and check the generated files against it.
       Any error stops here: nothing remote changed.
    2. Trust the manifest for files it records; check the others (and, with `verify`,
       all) against the bucket: one listing, then a HEAD for each listed at that size.
    3. Before touching any key, rewrite the manifest without it (marked pending).
    4. Send what differs: each object carries the sha256 of exactly the bytes sent; a
       file that changed while it was sent is sent again once, then the update fails.
    5. Only then delete the files removed from the source (versioning keeps them until
       the lifecycle expires them) and write the complete manifest.
    """
    target = _Target.of(s3, props)
    with _nothing_changed_yet():
        files = local_files(props["source"])
        _refuse_broken_configs(props["source"])
        generated = generated_files(props.get("generated") or {}, files)
    old = _read_manifest(target)
    with _nothing_changed_yet():
        local = _hash_source(files, old, workers) | {g.rel: g.entry for g in generated}
    if not files and (old.files or old.pending):
        raise SourceError(f"weight upload source {props['source']!r} is empty, but {target.bucket}/{target.prefix} holds "
                          f"{len(old.files)} uploaded files; refusing to delete them all (an unmounted volume?); nothing in "
                          "the bucket was changed. To retire the upload, remove it from weightCaches.s3.uploads (its objects stay)")
    items = sorted([*files, *generated], key=lambda f: f.rel)
    checked = {f.rel for f in items if verify or f.rel not in old.files}
    listing = _listing(target) if checked or old.pending else None
    held = _held(target, sorted(checked), local, listing, workers) if checked else set()
    todo = [f for f in items
            if (f.rel not in held if f.rel in checked else old.files[f.rel].get("sha256") != local[f.rel]["sha256"])]
    gone = sorted((set(old.files) | old.pending) - set(local))
    if listing is not None:
        gone = [rel for rel in gone if target.key(rel) in listing]
    touched = {f.rel for f in todo} | set(gone)
    if touched:
        _write_manifest(target, {rel: e for rel, e in local.items() if rel not in touched}, old.pending | touched)
    try:
        sent = _send_all(target, todo, local, workers)
    except S3Error as err:
        raise type(err)(f"{err}; no object was deleted and the upload manifest claims none of the unfinished files: "
                        "run `pulumi up` again to finish") from None
    _delete(target, gone)
    files_now = {**local, **sent}
    if touched or files_now != old.files or old.pending or not old.found:
        _write_manifest(target, files_now)
    return {
        **_content_outputs(files_now),
        "uploadedFiles": len(todo),
        "uploadedBytes": sum(e["size"] for e in sent.values()),
        "deletedFiles": len(gone),
        "drift": None,
    }


class UploadProvider(_S3Provider):
    """Syncs a local model repository to a bucket prefix. Stateless: see the module docstring."""

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
        changed = _changed({"generated": {}, **olds}, {"generated": {}, **news}, UPLOAD_INPUTS)
        # Re-uploading to a new place is an update; the old objects stay (a running version may read them).
        return DiffResult(changes=bool(changed) or _has_unknowns(news), replaces=[], stables=[])

    def create(self, props: dict[str, Any]) -> CreateResult:
        props = {k: _plain(v) for k, v in props.items()}
        result = sync_tree(client(props), props)
        return CreateResult(f"{props['bucket']}/{props['prefix'].strip('/')}", {**props, **result})

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """Refresh: does the bucket hold the content of every manifest entry (sha256 or plain-MD5 ETag, not sizes)?

        On drift the outputs describe only what was verified, `drift` says what differs,
        and the fingerprint input becomes "drifted", so the next `pulumi up` updates and
        the update checks every file against the bucket.
        """
        props = {k: _plain(v) for k, v in props.items()}
        verified, problems = audit(client(props), props)
        if not problems:
            return ReadResult(id_, {**props, "drift": None} if props.get("drift") else props)
        outs = {**props, **_content_outputs(verified), "drift": "; ".join(problems), "fingerprint": DRIFTED}
        inputs = {k: props[k] for k in UPLOAD_INPUTS if k in props} | {"fingerprint": DRIFTED}
        return ReadResult(id_, outs, inputs)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        news = {k: _plain(v) for k, v in news.items()}
        verify = olds.get("fingerprint") == DRIFTED
        return UpdateResult({**news, **sync_tree(client(news), news, verify=verify)})

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
        creds, opts = _resource_inputs(access_key_id, secret_access_key, opts)
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
