"""Weight caches: an NFS file share and an S3 bucket that Triton reads model repositories from.

File share. In mode `manila` an OpenStack Manila NFS share is created, with one
ShareAccess rule per allowed CIDR (default: the cluster's node subnet); in mode
`existing` the NFS server and path come from the stack file. A PersistentVolume
binds exactly one claim, so the share is exposed as **one PV per namespace** that
reads from it, each pre-bound both ways to the `model-weights` PVC of that
namespace (the PV's claimRef names the claim, the claim's volumeName names the PV,
storageClassName "" keeps dynamic provisioners away). All PVs point at the same
export, so every namespace sees the same files; reclaim policy Retain means that
deleting a claim or a PV never touches the data on the share.

S3. The bucket is a dynamic resource (s3bucket.py); every namespace that reads
from it gets the Secret `model-weights-s3` with the AWS_* variables Triton reads.
Configured uploads sync local model repositories into the bucket by content hash.
With `weightCaches.s3.mount.enabled`, s3mount.py also exposes the bucket as a
file-system claim for readers other than Triton, which keeps its `s3://` URL.

Production stacks protect the share, bucket, PVs and claims, and retain the share
and bucket on delete (deleting them would lose the weights).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional
from urllib.parse import urlparse

import pulumi
import pulumi_kubernetes as k8s
import pulumi_openstack as openstack

from .cluster import ClusterHandle
from .common import resource_opts, standard_labels
from .config import ConfigError, FileShareCache, Settings
from .s3bucket import S3Bucket, WeightUpload
from .s3mount import CLAIM_NAME as S3_MOUNT_CLAIM_NAME
from .s3mount import S3BucketMount

CLAIM_NAME = "model-weights"
S3_SECRET_NAME = "model-weights-s3"
MOUNT_PATH = "/models"
# NFSv4.1; hard mounts so a share failover stalls reads instead of failing them; no atime writes.
NFS_MOUNT_OPTIONS = ("nfsvers=4.1", "hard", "noatime", "timeo=600", "retrans=2")
NAMESPACE_LABEL = "inference-platform/weights-namespace"


# --------------------------------------------------------------------------- plain functions


def namespaces_using(settings: Settings, cache: str) -> list[str]:
    """Namespaces with at least one version that reads from `cache` ("fileShare" or "s3"), sorted."""
    return sorted({svc.k8s_namespace for svc in settings.services for v in svc.versions if v.model_repository.cache == cache})


def parse_export_location(location: str) -> tuple[str, str]:
    """`10.0.0.50:/volumes/x` -> ("10.0.0.50", "/volumes/x"); IPv6 `[fd00::5]:/x` -> ("fd00::5", "/x")."""
    server, sep, path = location.partition(":/")
    if not sep or not server:
        raise ValueError(f"NFS export location {location!r} is not of the form server:/path")
    return server.strip("[]"), "/" + path


def preferred_export(locations: Optional[list[Any]]) -> str:
    """The export path Manila marks preferred, else the first one."""
    if not locations:
        raise ValueError("the Manila share reports no export location")
    # The provider reports `preferred` as a string ("true"/"false").
    for loc in locations:
        if str(loc.get("preferred")).lower() == "true":
            return loc["path"]
    return locations[0]["path"]


def share_access_cidrs(share: FileShareCache, subnet_cidr: Optional[pulumi.Input[str]]) -> dict[str, pulumi.Input[str]]:
    """Client CIDRs allowed to mount the Manila share, by the name of their access rule: the
    configured ones, or else the cluster's node subnet (looked up when Magnum uses an existing one)."""
    if share.access_cidrs:
        return {_role(cidr): cidr for cidr in share.access_cidrs}
    if isinstance(subnet_cidr, str):
        return {_role(subnet_cidr): subnet_cidr}
    if subnet_cidr is not None:
        return {"nodes": subnet_cidr}
    raise ValueError(
        "weightCaches.fileShare (manila) needs accessCidrs: the cluster is not created by this stack, so its subnet is unknown"
    )


def triton_s3_url(endpoint: str, bucket: str, path: str) -> str:
    """Triton's S3 repository URL: `s3://bucket/path` on AWS, else `s3://[https://]host:port/bucket/path`.

    Triton parses non-AWS locations with an explicit port; it speaks HTTP unless the
    host is prefixed with https://.
    """
    url = urlparse(endpoint)
    host = url.hostname or ""
    path = path.strip("/")
    if host == "s3.amazonaws.com" or re.fullmatch(r"s3[.-]([a-z0-9-]+\.)?amazonaws\.com", host):
        return f"s3://{bucket}/{path}"
    port = url.port or (443 if url.scheme == "https" else 80)
    scheme = "https://" if url.scheme == "https" else ""
    return f"s3://{scheme}{host}:{port}/{bucket}/{path}"


def _role(text: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")


# --------------------------------------------------------------------------- handle


@dataclass(frozen=True)
class WeightsHandle:
    """What Triton services need from the weight caches."""

    claim_name: str = CLAIM_NAME
    s3_secret_name: str = S3_SECRET_NAME
    mount_path: str = MOUNT_PATH
    s3_endpoint: Optional[str] = None
    s3_bucket: Optional[str] = None
    file_share: bool = False
    claims: Mapping[str, pulumi.Resource] = field(default_factory=dict)
    s3_secrets: Mapping[str, pulumi.Resource] = field(default_factory=dict)
    uploads: tuple[pulumi.Resource, ...] = ()
    # csi-s3 claims for readers other than Triton (empty unless weightCaches.s3.mount.enabled).
    s3_mount_claim_name: str = S3_MOUNT_CLAIM_NAME
    s3_mount_claims: Mapping[str, pulumi.Resource] = field(default_factory=dict)

    def model_repository_url(self, cache: str, path: str) -> str:
        """The `--model-repository` value for a version's repository in `cache`."""
        if cache == "fileShare":
            if not self.file_share:
                raise ValueError("weight cache 'fileShare' is not configured")
            return f"{self.mount_path}/{path.strip('/')}"
        if cache == "s3":
            if not (self.s3_endpoint and self.s3_bucket):
                raise ValueError("weight cache 's3' is not configured")
            return triton_s3_url(self.s3_endpoint, self.s3_bucket, path)
        raise ValueError(f"unknown weight cache {cache!r}; allowed: fileShare, s3")

    def depends_on(self, namespace: str) -> list[pulumi.Resource]:
        """The claim, Secret and uploads a Triton Deployment in `namespace` must wait for."""
        out: list[pulumi.Resource] = []
        if namespace in self.claims:
            out.append(self.claims[namespace])
        if namespace in self.s3_secrets:
            out.append(self.s3_secrets[namespace])
            out.extend(self.uploads)
        return out


# --------------------------------------------------------------------------- component


class WeightCaches(pulumi.ComponentResource):
    """The file share with its PVs and claims, and the S3 bucket with its Secrets and uploads."""

    def __init__(
        self,
        name: str,
        settings: Settings,
        cluster: ClusterHandle,
        namespaces: Mapping[str, pulumi.Resource],
        opts: Optional[pulumi.ResourceOptions] = None,
    ):
        super().__init__("inference-platform:weights:WeightCaches", name, None, opts)
        self._name = name
        self._provider = cluster.provider
        self._namespaces = namespaces
        self._prod = settings.production
        caches = settings.weight_caches
        claims: dict[str, pulumi.Resource] = {}
        secrets: dict[str, pulumi.Resource] = {}
        uploads: list[pulumi.Resource] = []
        mount_claims: Mapping[str, pulumi.Resource] = {}
        outputs: dict[str, Any] = {}
        if caches.file_share is not None:
            server, path = self._file_share(caches.file_share, cluster)
            for ns in namespaces_using(settings, "fileShare"):
                claims[ns] = self._claim(ns, caches.file_share, server, path)
            outputs["nfsServer"], outputs["nfsPath"] = server, path
        if caches.s3 is not None:
            bucket, uploads = self._bucket(settings)
            for ns in namespaces_using(settings, "s3"):
                secrets[ns] = self._s3_secret(ns, settings)
            outputs["bucket"] = bucket.bucket
            if caches.s3.mount.enabled:
                mount_claims = self._mount(settings, bucket)
        self.handle = WeightsHandle(
            s3_endpoint=caches.s3.endpoint if caches.s3 else None,
            s3_bucket=caches.s3.bucket if caches.s3 else None,
            file_share=caches.file_share is not None,
            claims=claims,
            s3_secrets=secrets,
            uploads=tuple(uploads),
            s3_mount_claims=mount_claims,
        )
        self.register_outputs(outputs)

    def _opts(self, *, protect: bool = False, retain: bool = False, depends_on=(), k8s_provider: bool = True, **extra):
        opts = resource_opts(self, provider=self._provider if k8s_provider else None, protect=protect and self._prod,
                             retain_on_delete=retain and self._prod, depends_on=depends_on)
        return pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(**extra)) if extra else opts

    # ------------------------------------------------------------------ file share

    def _file_share(self, cfg: FileShareCache, cluster: ClusterHandle) -> tuple[pulumi.Input[str], pulumi.Input[str]]:
        if cfg.mode == "existing":
            return cfg.server, cfg.path
        self._share = openstack.sharedfilesystem.Share(
            f"{self._name}-share",
            name=self._name,
            description="Model weights of the inference platform (read by Triton)",
            share_proto="NFS",
            size=cfg.size_gb,
            share_type=cfg.share_type,
            share_network_id=cfg.share_network_id,
            opts=self._opts(protect=True, retain=True, k8s_provider=False),
        )
        try:
            cidrs = share_access_cidrs(cfg, cluster.subnet_cidr)
        except ValueError as err:
            raise ConfigError(f"stacks/Pulumi.{pulumi.get_stack()}.yaml", [(("weightCaches", "fileShare", "accessCidrs"), str(err))]) from None
        # rw: the share is filled from inside the cluster network; Triton mounts it read-only.
        self._share_access = [
            openstack.sharedfilesystem.ShareAccess(
                f"{self._name}-share-access-{role}",
                share_id=self._share.id,
                access_type="ip",
                access_to=cidr,
                access_level="rw",
                opts=self._opts(k8s_provider=False),
            )
            for role, cidr in cidrs.items()
        ]
        export = self._share.export_locations.apply(lambda locs: parse_export_location(preferred_export(locs)))
        return export[0], export[1]

    def _claim(self, ns: str, cfg: FileShareCache, server, path) -> pulumi.Resource:
        labels = standard_labels(CLAIM_NAME, **{NAMESPACE_LABEL: ns})
        deps = list(getattr(self, "_share_access", []))
        pv = k8s.core.v1.PersistentVolume(
            f"{self._name}-pv-{ns}",
            metadata={"labels": labels},
            spec={
                "capacity": {"storage": cfg.storage_size},
                "accessModes": ["ReadWriteMany"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": "",
                "mountOptions": list(NFS_MOUNT_OPTIONS),
                "nfs": {"server": server, "path": path},
                # Reserved for this namespace's claim: no other claim can take it.
                "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": ns, "name": CLAIM_NAME},
            },
            opts=self._opts(protect=True, depends_on=deps),
        )
        ns_dep = [self._namespaces[ns]] if ns in self._namespaces else []
        return k8s.core.v1.PersistentVolumeClaim(
            f"{self._name}-pvc-{ns}",
            metadata={"name": CLAIM_NAME, "namespace": ns, "labels": labels},
            spec={
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "",
                "volumeName": pv.metadata["name"],
                "resources": {"requests": {"storage": cfg.storage_size}},
            },
            # volumeName is immutable: a new PV means a new claim, and the fixed name must be free first.
            opts=self._opts(protect=True, depends_on=ns_dep, delete_before_replace=True),
        )

    # ------------------------------------------------------------------ S3

    def _credentials(self, settings: Settings) -> tuple[pulumi.Output, pulumi.Output]:
        return (
            pulumi.Output.secret(settings.s3_access_key_id.get_secret_value()),
            pulumi.Output.secret(settings.s3_secret_access_key.get_secret_value()),
        )

    def _bucket(self, settings: Settings) -> tuple[S3Bucket, list[pulumi.Resource]]:
        cfg = settings.weight_caches.s3
        key_id, secret = self._credentials(settings)
        where = {"endpoint": cfg.endpoint, "region": cfg.region, "access_key_id": key_id, "secret_access_key": secret}
        bucket = S3Bucket(
            f"{self._name}-bucket",
            bucket=cfg.bucket,
            **where,
            versioning=cfg.versioning,
            noncurrent_days=cfg.noncurrent_days,
            force_destroy=cfg.force_destroy,
            adopt=cfg.adopt,
            opts=self._opts(protect=True, retain=True, k8s_provider=False),
        )
        uploads: list[pulumi.Resource] = [
            WeightUpload(
                f"{self._name}-upload-{_role(up.prefix)}",
                bucket=bucket.bucket,
                **where,
                source=up.source,
                prefix=up.prefix,
                opts=self._opts(k8s_provider=False),
            )
            for up in cfg.uploads
        ]
        return bucket, uploads

    def _mount(self, settings: Settings, bucket: S3Bucket) -> Mapping[str, pulumi.Resource]:
        namespaces = {ns: self._namespaces.get(ns) for ns in namespaces_using(settings, "s3")}
        mount = S3BucketMount(f"{self._name}-s3-mount", settings, self._provider, bucket.bucket,
                              self._credentials(settings), namespaces, opts=pulumi.ResourceOptions(parent=self))
        return mount.handle.claims

    def _s3_secret(self, ns: str, settings: Settings) -> pulumi.Resource:
        key_id, secret = self._credentials(settings)
        ns_dep = [self._namespaces[ns]] if ns in self._namespaces else []
        return k8s.core.v1.Secret(
            f"{self._name}-s3-{ns}",
            metadata={"name": S3_SECRET_NAME, "namespace": ns, "labels": standard_labels(S3_SECRET_NAME)},
            type="Opaque",
            string_data={
                "AWS_ACCESS_KEY_ID": key_id,
                "AWS_SECRET_ACCESS_KEY": secret,
                "AWS_DEFAULT_REGION": pulumi.Output.secret(settings.weight_caches.s3.region),
            },
            opts=self._opts(depends_on=ns_dep),
        )
