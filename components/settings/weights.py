"""`weightCaches`: the NFS file share and the S3 bucket that model repositories are read from."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional

from pydantic import AfterValidator, Field, model_validator

from inference_platform.core import grammar
from inference_platform.settings.base import Cidr, HostOrIp, Model, Quantity, RelativePath, Text, _checked, upload_source


class FileShareCache(Model):
    mode: Literal["manila", "existing"] = "manila"
    """`manila`: create an OpenStack Manila NFS share; `existing`: mount an NFS export that exists."""
    size_gb: int = Field(default=500, ge=1, le=100000)
    """Share size, GB (manila)."""
    share_type: Optional[Text] = None
    """Manila share type (default: the cloud's default)."""
    share_network_id: Optional[Text] = None
    """Manila share network (needed by drivers that manage share servers)."""
    access_cidrs: list[Cidr] = []
    """Client CIDRs allowed to mount the share (default: the cluster's subnet)."""
    server: Optional[HostOrIp] = None
    """NFS server (existing): a host name or an IP address."""
    path: Optional[Annotated[str, AfterValidator(grammar.absolute_path)]] = None
    """NFS export path (existing), absolute."""
    storage_size: Quantity = "500Gi"
    """Capacity of the PersistentVolumes that expose the share."""

    @model_validator(mode="after")
    def _existing_needs_export(self) -> "FileShareCache":
        if self.mode == "existing" and not (self.server and self.path):
            raise ValueError("mode 'existing' needs server and path of the NFS export")
        if self.mode == "manila" and (self.server or self.path):
            raise ValueError("server and path apply to mode 'existing' only; manila takes them from the share")
        return self


class WeightUpload(Model):
    source: Annotated[str, AfterValidator(upload_source)]
    """Local model-repository directory (relative to the project) to upload: an existing, readable directory, not a system directory."""
    prefix: RelativePath
    """Key prefix in the bucket."""
    presets: list[Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,39}$")]] = Field(default=[], max_length=16)
    """Tuning presets (built-in `latency`, `throughput`, or `tuningPresets` names) rendered for every model of the source that has a config.pbtxt, uploaded as `<model>/configs/<preset>.pbtxt` (select one with a version's modelConfigName)."""


class S3Mount(Model):
    enabled: bool = False
    """Install the csi-s3 driver (GeeseFS) and expose the bucket as the claim `model-weights-s3-mount` in each namespace that reads from S3, for readers that want a POSIX path (mount it readOnly; Triton keeps its `s3://` URL)."""
    prefix: Annotated[str, AfterValidator(lambda v: v and grammar.relative_path(v))] = ""
    """Key prefix to mount instead of the whole bucket, e.g. `models`."""
    mount_options: str = Field(default="--memory-limit 1000 --dir-mode 0555 --file-mode 0444", pattern=r"^[-A-Za-z0-9_.,= ]*$")
    """GeeseFS options of the mount (`--memory-limit` is MB of node memory per mounted volume)."""
    storage_size: Quantity = "1Ti"
    """Nominal capacity of the PersistentVolumes (S3 has no size; binding needs one)."""


class S3Cache(Model):
    endpoint: Annotated[str, _checked(grammar.url, ("https", "http"), False)]
    """S3-compatible endpoint URL, e.g. https://s3.example.cloud (credentials: secret keys `inference-platform:s3AccessKeyId` and `s3SecretAccessKey`)."""
    region: Annotated[str, Field(pattern=r"^[A-Za-z0-9][-A-Za-z0-9_]{0,62}$")] = "us-east-1"
    """Region name the endpoint expects."""
    bucket: Annotated[str, AfterValidator(grammar.bucket_name)]
    """Bucket name (S3 naming rules; with lokiStorage `s3`, `<bucket>-logs` must be one too)."""
    versioning: bool = True
    """Keep object versions."""
    noncurrent_days: int = Field(default=30, ge=1, le=3650)
    """Days after which old object versions expire."""
    force_destroy: bool = False
    """Allow deleting a non-empty bucket (every object version goes with it); not allowed with `adopt`."""
    adopt: bool = False
    """Use a bucket of ours that already exists (its data stays; our settings are applied to it), and Loki's `<bucket>-logs` with lokiStorage `s3`. Without it an existing bucket is an error, so a typo in `bucket` cannot take over another stack's data. An adopted bucket is never emptied or deleted: removing it from the stack only forgets it."""
    uploads: list[WeightUpload] = []
    """Local model repositories uploaded to the bucket on every `pulumi up` (content-hashed; unchanged files are skipped)."""
    mount: S3Mount = S3Mount()
    """Optional mount of the bucket as a file system (csi-s3); off by default."""


class WeightCacheSettings(Model):
    file_share: Optional[FileShareCache] = None
    """NFS file share mounted read-only into every replica that uses it."""
    s3: Optional[S3Cache] = None
    """S3 bucket Triton reads model repositories from."""


def upload_prefix_overlaps(caches: WeightCacheSettings) -> list[tuple[tuple, str]]:
    """(key path, problem) for an upload whose prefix equals or nests in another's.

    Each upload owns its prefix: it deletes what its manifest recorded once the source drops it,
    and a model repository that holds another upload's keys serves them as models. Two uploads
    whose prefixes nest would overwrite and delete each other's objects.
    """
    uploads = caches.s3.uploads if caches.s3 else []
    problems = []
    for j, later in enumerate(uploads):
        for i, earlier in enumerate(uploads[:j]):
            a, b = earlier.prefix.strip("/") + "/", later.prefix.strip("/") + "/"
            if a.startswith(b) or b.startswith(a):
                problems.append((("weightCaches", "s3", "uploads", j, "prefix"),
                                 f"{later.prefix!r} {'is' if a == b else 'nests with'} weightCaches.s3.uploads[{i}].prefix "
                                 f"{earlier.prefix!r}; allowed: prefixes of which none is inside another (e.g. models/a and models/b)"))
    return problems


def loki_bucket_name(bucket: str) -> str:
    """Loki's bucket on the S3 weight cache's endpoint."""
    return f"{bucket}-logs"


def loki_bucket_problems(s3: S3Cache) -> list[str]:
    """Loki's bucket, named after the weight bucket, must be a bucket name too (the stack and
    Observability used alone)."""
    try:
        grammar.bucket_name(loki_bucket_name(s3.bucket))
    except ValueError as err:
        return [f"Loki's bucket derived from it: {err}"]
    return []


def adopted_bucket_problems(caches: WeightCacheSettings) -> list[tuple[tuple, str]]:
    """An adopted bucket is never force-destroyed (the stack and WeightCaches used alone)."""
    if caches.s3 is None or not (caches.s3.adopt and caches.s3.force_destroy):
        return []
    return [(("weightCaches", "s3", "forceDestroy"), "forceDestroy: true is not allowed with adopt: true "
             "(an adopted bucket held data before this stack and is never emptied); allowed: forceDestroy: false")]


MANILA_NEEDS_CIDRS = ("weightCaches.fileShare (manila) needs accessCidrs: the cluster is not created by this stack, "
                      "so its subnet is unknown")


def needs_access_cidrs(caches: WeightCacheSettings, subnet_cidr: Any) -> bool:
    """A Manila share's access rules need CIDRs: none configured and the node subnet unknown."""
    share = caches.file_share
    return share is not None and share.mode == "manila" and not share.access_cidrs and subnet_cidr is None
