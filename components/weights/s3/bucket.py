"""The weight bucket: BucketProvider (a Pulumi dynamic provider) and its resource, S3Bucket.

A bucket with versioning, a lifecycle rule expiring noncurrent versions, Object Ownership
``BucketOwnerEnforced`` (ACLs disabled, as AWS creates buckets since April 2023; no ACL is
ever written), and public access blocked. Settings a server does not implement are skipped
(SeaweedFS has no public access block). An existing bucket of ours is adopted only with
``adopt``, and an adopted bucket is never emptied or deleted: on delete it is only forgotten.
One owned by someone else is an error. Settings change in place; only a new bucket name replaces
it. A new endpoint is an update, never a replacement: an endpoint is how the bucket is reached, and
no URL says whether two endpoints reach the same server (AWS's global and regional endpoints,
DNS aliases), while a replacement's old half would be deleted with its old settings after the new
half took the same bucket over (pulumi/pulumi pkg/resource/deploy/step.go, DeleteStep.Apply:
``prov.Delete`` with ``s.old.Inputs``/``s.old.Outputs``). So the update reaches the bucket at the
new endpoint (creating it there, or adopting it with ``adopt``) and leaves whatever the old
endpoint holds untouched. A non-empty bucket is deleted only with ``forceDestroy``.
"""

from __future__ import annotations

from typing import Any, Optional

import pulumi
from pulumi.dynamic import CheckFailure, CreateResult, DiffResult, ReadResult, UpdateResult

from inference_platform.weights.s3.client import (
    UNSUPPORTED_CODES,
    S3Error,
    call_or_explain,
    client,
    error_code,
    explain,
    http_status,
    plain,
    same_server,
    unsupported,
)
from inference_platform.weights.s3.provider import S3Provider, changed_inputs, has_unknowns, resource_inputs

LIFECYCLE_RULE_ID = "inference-platform-noncurrent-versions"
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
        if error_code(err) in ("NoSuchLifecycleConfiguration", *UNSUPPORTED_CODES):
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
        if unsupported(err):
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
        if error_code(err) == "InvalidBucketAclWithObjectOwnership":
            raise S3Error(f"bucket {bucket}: its ACL grants access to others, so ACLs cannot be disabled "
                          f"(ObjectOwnership {OBJECT_OWNERSHIP}); move those grants to a bucket policy, reset the ACL to "
                          "private and run `pulumi up` again") from None
        if not unsupported(err):
            raise explain(err, f"enforcing bucket-owner object ownership on bucket {bucket}", props["endpoint"]) from None


def _block_public_access(s3, props: dict[str, Any]) -> None:
    from botocore.exceptions import ClientError

    bucket = props["bucket"]
    try:
        s3.put_public_access_block(Bucket=bucket, PublicAccessBlockConfiguration=dict.fromkeys(PUBLIC_ACCESS_BLOCK, True))
    except ClientError as err:
        if not unsupported(err):
            raise explain(err, f"blocking public access to bucket {bucket}", props["endpoint"]) from None


def configure_bucket(s3, props: dict[str, Any]) -> dict[str, Any]:
    """Apply ownership, versioning, lifecycle and public-access settings; return what the server now reports.

    A bucket public through its ACL is refused before anything changes.
    """
    bucket = props["bucket"]
    _refuse_public_acl(s3, props)
    _enforce_bucket_owner(s3, props)
    if props.get("versioning", True):
        call_or_explain(props, f"enabling versioning on bucket {bucket}", s3.put_bucket_versioning,
              Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    elif call_or_explain(props, f"reading versioning of bucket {bucket}", s3.get_bucket_versioning, Bucket=bucket).get("Status"):
        # A bucket that was ever versioned can only be suspended.
        call_or_explain(props, f"suspending versioning on bucket {bucket}", s3.put_bucket_versioning,
              Bucket=bucket, VersioningConfiguration={"Status": "Suspended"})
    # Keep lifecycle rules someone else added to an adopted bucket; own only ours.
    rules = _other_lifecycle_rules(s3, props, bucket) + [_lifecycle_rule(props.get("noncurrentDays", 30))]
    call_or_explain(props, f"setting the lifecycle of bucket {bucket}", s3.put_bucket_lifecycle_configuration,
          Bucket=bucket, LifecycleConfiguration={"Rules": rules})
    _block_public_access(s3, props)
    return observe_bucket(s3, props)


def _object_ownership(s3, props: dict[str, Any]) -> Optional[str]:
    from botocore.exceptions import ClientError

    bucket = props["bucket"]
    try:
        rules = s3.get_bucket_ownership_controls(Bucket=bucket)["OwnershipControls"]["Rules"]
    except ClientError as err:
        if error_code(err) == "OwnershipControlsNotFoundError" or unsupported(err):
            return None
        raise explain(err, f"reading the object ownership of bucket {bucket}", props["endpoint"]) from None
    return rules[0].get("ObjectOwnership") if rules else None


def observe_bucket(s3, props: dict[str, Any]) -> dict[str, Any]:
    """The bucket's settings as the server reports them."""
    from botocore.exceptions import ClientError

    bucket = props["bucket"]
    status = call_or_explain(props, f"reading versioning of bucket {bucket}", s3.get_bucket_versioning, Bucket=bucket).get("Status")
    days = None
    try:
        for rule in s3.get_bucket_lifecycle_configuration(Bucket=bucket).get("Rules", []):
            if rule.get("ID") == LIFECYCLE_RULE_ID and rule.get("Status") == "Enabled":
                days = rule.get("NoncurrentVersionExpiration", {}).get("NoncurrentDays")
    except ClientError as err:
        if error_code(err) not in ("NoSuchLifecycleConfiguration", *UNSUPPORTED_CODES):
            raise explain(err, f"reading the lifecycle of bucket {bucket}", props["endpoint"]) from None
    blocked: Optional[bool] = None
    try:
        block = s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"]
        blocked = all(block.get(k) for k in PUBLIC_ACCESS_BLOCK)
    except ClientError as err:
        if error_code(err) != "NoSuchPublicAccessBlockConfiguration" and not unsupported(err):
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
        raise explain(err, f"checking that bucket {bucket} is this account's own", props["endpoint"]) from None
    return names


def _exists(s3, props: dict[str, Any], foreign: S3Error) -> bool:
    """Whether the bucket exists (and is open to us); `foreign` when it exists but is closed to us."""
    from botocore.exceptions import ClientError

    bucket, endpoint = props["bucket"], props["endpoint"]
    try:
        s3.head_bucket(Bucket=bucket)
        return True
    except ClientError as err:
        if http_status(err) == 404 or error_code(err) in ("404", "NoSuchBucket", "NotFound"):
            return False
        if http_status(err) == 403 and _owned_bucket_names(s3, props, bucket) is not None:
            # Our credentials work (the listing succeeded) but this bucket is closed to us.
            raise foreign from None
        raise explain(err, f"looking up bucket {bucket}", endpoint) from None
    except Exception as err:  # noqa: BLE001
        raise explain(err, f"looking up bucket {bucket}", endpoint) from None


def _adopt(props: dict[str, Any], moved_from: Optional[str] = None) -> bool:
    """True (adopted) when the stack says `adopt`; else the one-line refusal."""
    if props.get("adopt"):
        return True
    if moved_from:
        raise S3Error(f"bucket {props['bucket']} already exists at the new endpoint {props['endpoint']} (the stack's was at "
                      f"{moved_from}); it may be the same bucket reached another way, or another one holding data, so it is "
                      "used only when adopted explicitly: set weightCaches.s3.adopt: true (nothing was changed; an adopted "
                      "bucket is never emptied or deleted by the stack)")
    raise S3Error(f"bucket {props['bucket']} already exists at {props['endpoint']} and is ours; it may hold data from "
                  "before this stack, so it is used only when adopted explicitly: set weightCaches.s3.adopt: true "
                  "(an adopted bucket is never emptied or deleted by the stack)")


def create_or_adopt(s3, props: dict[str, Any], moved_from: Optional[str] = None) -> bool:
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
            return _adopt(props, moved_from)
        raise foreign
    kwargs: dict[str, Any] = {"Bucket": bucket}
    if region != "us-east-1":
        kwargs["CreateBucketConfiguration"] = {"LocationConstraint": region}
    try:
        s3.create_bucket(**kwargs)
        return False
    except ClientError as err:
        if error_code(err) == "BucketAlreadyOwnedByYou":
            return _adopt(props, moved_from)
        if error_code(err) == "BucketAlreadyExists":
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
            result = call_or_explain(props, f"emptying bucket {bucket}", s3.delete_objects,
                           Bucket=bucket, Delete={"Objects": batch, "Quiet": True})
            if result.get("Errors"):
                first = result["Errors"][0]
                raise S3Error(f"emptying bucket {bucket}: {first.get('Code')}: {first.get('Message')} ({first.get('Key')})")
            removed += len(batch)
    uploads = call_or_explain(props, f"listing uploads of bucket {bucket}", s3.list_multipart_uploads, Bucket=bucket)
    for up in uploads.get("Uploads", []):
        call_or_explain(props, f"aborting an upload in bucket {bucket}", s3.abort_multipart_upload,
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


def _configure_new(s3, props: dict[str, Any], adopted: bool) -> dict[str, Any]:
    try:
        return configure_bucket(s3, props)
    except S3Error:
        if not adopted:
            # A failed create leaves no state: without this, the next `up` would find the bucket and ask to adopt it.
            _remove_new_bucket(s3, props)
        raise


class BucketProvider(S3Provider):
    """CRUD of one S3-compatible bucket. Stateless: see provider.py."""

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
        changed = changed_inputs({"adopt": False, **olds}, news, BUCKET_INPUTS)
        if "endpoint" in changed and same_server(olds.get("endpoint"), news.get("endpoint")):
            changed.remove("endpoint")  # another spelling of the same server (scheme, case, a trailing '/')
        # Only a new name is another bucket; a new endpoint is an update (module docstring).
        replaces = ["bucket"] if "bucket" in changed and not has_unknowns({"bucket": news.get("bucket")}) else []
        return DiffResult(changes=bool(changed) or has_unknowns(news), replaces=replaces, stables=[],
                          delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        props = {k: plain(v) for k, v in props.items()}
        s3 = client(props)
        adopted = create_or_adopt(s3, props)
        return CreateResult(props["bucket"], {**props, **_configure_new(s3, props, adopted), "adopted": adopted})

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        from botocore.exceptions import ClientError

        props = {k: plain(v) for k, v in props.items()}
        s3 = client(props)
        try:
            s3.head_bucket(Bucket=id_)
        except ClientError as err:
            if http_status(err) == 404 or error_code(err) in ("404", "NoSuchBucket", "NotFound"):
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
        news = {k: plain(v) for k, v in news.items()}
        s3 = client(news)
        old_endpoint = plain(olds.get("endpoint"))
        if old_endpoint is not None and not same_server(old_endpoint, news["endpoint"]):
            # Another server: the bucket there is created, or adopted with `adopt`; the old one stays as it is.
            adopted = create_or_adopt(s3, news, moved_from=old_endpoint)
            return UpdateResult({**news, **_configure_new(s3, news, adopted), "adopted": adopted})
        return UpdateResult({**news, **configure_bucket(s3, news), "adopted": bool(olds.get("adopted"))})

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        from botocore.exceptions import ClientError

        props = {k: plain(v) for k, v in props.items()}
        if props.get("adopted"):
            # It held data before this stack: the stack forgets it and leaves every object where it is.
            return
        props["bucket"] = id_
        s3 = client(props)
        try:
            listing = s3.list_object_versions(Bucket=id_, MaxKeys=1)
        except ClientError as err:
            if error_code(err) == "NoSuchBucket":
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
        call_or_explain(props, f"deleting bucket {id_}", s3.delete_bucket, Bucket=id_)


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
        creds, opts = resource_inputs(access_key_id, secret_access_key, opts)
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
