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

S3. The bucket is a dynamic resource (s3/bucket.py); every namespace that reads
from it gets the Secret `model-weights-s3` with the AWS_* variables Triton reads.
Configured uploads sync local model repositories into the bucket by content hash,
with a config variant per model and tuning preset the upload names (presets.py).
With `weightCaches.s3.mount.enabled`, s3mount.py also exposes the bucket as a
file-system claim for readers other than Triton, which keeps its `s3://` URL.

Production stacks protect the share, bucket, PVs and claims, and retain the share
and bucket on delete (deleting them would lose the weights).
"""

import re
from typing import Any, Optional, Sequence
from urllib.parse import urlparse

import pulumi
import pulumi_kubernetes as k8s
import pulumi_openstack as openstack

from inference_platform.args import WeightCachesArgs
from inference_platform.core.common import init_component, resource_opts, standard_labels
from inference_platform.settings.component_args import validated
from inference_platform.settings.graphs import Graph
from inference_platform.settings.serving import Service
from inference_platform.settings.weights import MANILA_NEEDS_CIDRS, FileShareCache
from inference_platform.tuning.presets import all_presets, upload_variants
from inference_platform.weights.inputs import WeightCachesInputs, WeightsRef
from inference_platform.weights.s3.bucket import S3Bucket
from inference_platform.weights.s3.upload import WeightUpload
from inference_platform.weights.s3mount import S3BucketMount

CLAIM_NAME = "model-weights"
S3_SECRET_NAME = "model-weights-s3"
MOUNT_PATH = "/models"
# NFSv4.1; hard mounts so a share failover stalls reads instead of failing them; no atime writes.
NFS_MOUNT_OPTIONS = ("nfsvers=4.1", "hard", "noatime", "timeo=600", "retrans=2")
NAMESPACE_LABEL = "inference-platform/weights-namespace"


# --------------------------------------------------------------------------- plain functions


def namespaces_using(services: Sequence[Service], cache: str, graphs: Sequence[Graph] = ()) -> list[str]:
    """Namespaces with at least one version or graph step that reads from `cache` ("fileShare" or "s3"), sorted."""
    return sorted({svc.k8s_namespace for svc in services for v in svc.versions if v.model_repository.cache == cache}
                  | {g.k8s_namespace for g in graphs for step in g.steps if step.model_repository.cache == cache})


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
    raise ValueError(MANILA_NEEDS_CIDRS)


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


# --------------------------------------------------------------------------- component


class WeightCaches(pulumi.ComponentResource):
    """The file share with its PVs and claims, and the S3 bucket with its Secrets and uploads."""

    nfs_server: Optional[pulumi.Output[str]]
    """NFS server of the file share (unset without one)."""
    nfs_path: Optional[pulumi.Output[str]]
    """Export path of the file share on its server."""
    bucket: Optional[pulumi.Output[str]]
    """The S3 bucket holding the model repositories (unset without one)."""

    def __init__(self, name: str, args: WeightCachesArgs, opts: Optional[pulumi.ResourceOptions] = None):
        a = validated(WeightCachesInputs, args, "WeightCaches")
        init_component(self, "WeightCaches", name, opts)
        self._name, self._prod = name, a.production
        self._caches = caches = a.weight_caches
        self._namespace_names = a.namespace_names
        self._claims: dict[str, pulumi.Resource] = {}
        self._s3_secrets: dict[str, pulumi.Resource] = {}
        self._uploads: list[pulumi.Resource] = []
        # csi-s3 claims for readers other than Triton (empty unless weightCaches.s3.mount.enabled).
        self.s3_mount_claims: dict[str, pulumi.Resource] = {}
        self.nfs_server = self.nfs_path = self.bucket = None
        # Per namespace, its claims of single directories of the share (a training job's checkpoints).
        self._directory_claims: dict[str, list[pulumi.Resource]] = {}
        if caches.file_share is not None:
            self.nfs_server, self.nfs_path = self._file_share(caches.file_share, a.subnet_cidr)
            for ns in a.file_share_namespaces:
                self._claims[ns] = self._claim(ns, caches.file_share, self.nfs_server, self.nfs_path,
                                               read_only=ns in a.read_only_namespaces)
            for ns, directories in a.writable_directories.items():
                self._directory_claims[ns] = [
                    self._claim(ns, caches.file_share, self.nfs_server, pulumi.Output.concat(self.nfs_path, "/", directory),
                                claim=claim, read_only=False)
                    for claim, directory in directories.items()]
        if caches.s3 is not None:
            credentials = (pulumi.Output.secret(a.s3_access_key_id.get_secret_value()),
                           pulumi.Output.secret(a.s3_secret_access_key.get_secret_value()))
            bucket = self._bucket(a, credentials)
            for ns in a.s3_namespaces:
                self._s3_secrets[ns] = self._s3_secret(ns, a, credentials)
            self.bucket = bucket.bucket
            if caches.s3.mount.enabled:
                mount = S3BucketMount(f"{name}-s3-mount", caches.s3, bucket.bucket, credentials,
                                      {ns: self._namespace(ns) for ns in a.s3_namespaces},
                                      a.node_groups, a.cold_start, a.production, resource_opts(self),
                                      system_node_selector=a.system_node_selector)
                self.s3_mount_claims = mount.claims
        outputs = {"nfsServer": self.nfs_server, "nfsPath": self.nfs_path, "bucket": self.bucket}
        self.register_outputs({k: v for k, v in outputs.items() if v is not None})

    def depends_on(self, namespace: str) -> list[pulumi.Resource]:
        """The claim, Secret and uploads a Triton Deployment in `namespace` must wait for
        (not the csi-s3 claims: Triton reads its s3:// URL)."""
        out: list[pulumi.Resource] = []
        if namespace in self._claims:
            out.append(self._claims[namespace])
        out.extend(self._directory_claims.get(namespace, []))
        if namespace in self._s3_secrets:
            out.append(self._s3_secrets[namespace])
            out.extend(self._uploads)
        return out

    def reference(self, namespace: str) -> WeightsRef:
        """Where a service in `namespace` reads its model repositories: the caches that have
        a claim or a Secret there."""
        ref: dict[str, str] = {"mount_path": MOUNT_PATH}
        if namespace in self._claims:
            ref["claim_name"] = CLAIM_NAME
        if namespace in self._s3_secrets:
            ref.update(s3_secret_name=S3_SECRET_NAME, s3_endpoint=self._caches.s3.endpoint, s3_bucket=self._caches.s3.bucket)
        return WeightsRef(**ref)

    def _namespace(self, ns: str) -> pulumi.Input[str]:
        """`ns` as its creator outputs it, if given: what is created in it waits for it."""
        return self._namespace_names.get(ns, ns)

    def _opts(self, *, protect: bool = False, retain: bool = False, depends_on=(), **extra):
        opts = resource_opts(self, protect=protect and self._prod, retain_on_delete=retain and self._prod,
                             depends_on=depends_on)
        return pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(**extra)) if extra else opts

    # ------------------------------------------------------------------ file share

    def _file_share(self, cfg: FileShareCache, subnet_cidr) -> tuple[pulumi.Input[str], pulumi.Input[str]]:
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
            opts=self._opts(protect=True, retain=True),
        )
        # rw: the share is filled from inside the cluster network; Triton mounts it read-only.
        self._share_access = [
            openstack.sharedfilesystem.ShareAccess(
                f"{self._name}-share-access-{role}",
                share_id=self._share.id,
                access_type="ip",
                access_to=cidr,
                access_level="rw",
                opts=self._opts(),
            )
            for role, cidr in share_access_cidrs(cfg, subnet_cidr).items()
        ]
        export = self._share.export_locations.apply(lambda locs: parse_export_location(preferred_export(locs)))
        return export[0], export[1]

    def _claim(self, ns: str, cfg: FileShareCache, server, path, claim: str = CLAIM_NAME,
               read_only: bool = False) -> pulumi.Resource:
        """A claim in `ns` pre-bound to a PV of the export `path`; `read_only` mounts it read-only
        whatever a pod asks (the API's NFSVolumeSource.readOnly: "force the NFS export to be mounted
        with read-only permissions")."""
        labels = standard_labels(claim, **{NAMESPACE_LABEL: ns})
        deps = list(getattr(self, "_share_access", []))
        suffix = "" if claim == CLAIM_NAME else f"-{claim}"
        pv = k8s.core.v1.PersistentVolume(
            f"{self._name}-pv-{ns}{suffix}",
            metadata={"labels": labels},
            spec={
                "capacity": {"storage": cfg.storage_size},
                "accessModes": ["ReadWriteMany"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": "",
                "mountOptions": list(NFS_MOUNT_OPTIONS),
                "nfs": {"server": server, "path": path, **({"readOnly": True} if read_only else {})},
                # Reserved for this namespace's claim: no other claim can take it.
                "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": ns, "name": claim},
            },
            opts=self._opts(protect=True, depends_on=deps),
        )
        return k8s.core.v1.PersistentVolumeClaim(
            f"{self._name}-pvc-{ns}{suffix}",
            metadata={"name": claim, "namespace": self._namespace(ns), "labels": labels},
            spec={
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "",
                "volumeName": pv.metadata["name"],
                "resources": {"requests": {"storage": cfg.storage_size}},
            },
            # volumeName is immutable: a new PV means a new claim, and the fixed name must be free first.
            opts=self._opts(protect=True, delete_before_replace=True),
        )

    # ------------------------------------------------------------------ S3

    def _bucket(self, a: WeightCachesInputs, credentials: tuple[pulumi.Output, pulumi.Output]) -> S3Bucket:
        cfg = a.weight_caches.s3
        key_id, secret = credentials
        presets = all_presets(a.tuning_presets)
        where = {"endpoint": cfg.endpoint, "region": cfg.region, "access_key_id": key_id, "secret_access_key": secret}
        bucket = S3Bucket(
            f"{self._name}-bucket",
            bucket=cfg.bucket,
            **where,
            versioning=cfg.versioning,
            noncurrent_days=cfg.noncurrent_days,
            force_destroy=cfg.force_destroy,
            adopt=cfg.adopt,
            opts=self._opts(protect=True, retain=True),
        )
        self._uploads = [
            WeightUpload(
                f"{self._name}-upload-{_role(up.prefix)}",
                bucket=bucket.bucket,
                **where,
                source=up.source,
                prefix=up.prefix,
                generated=upload_variants(up.source, {name: presets[name] for name in up.presets}),
                opts=self._opts(),
            )
            for up in cfg.uploads
        ]
        return bucket

    def _s3_secret(self, ns: str, a: WeightCachesInputs, credentials: tuple[pulumi.Output, pulumi.Output]) -> pulumi.Resource:
        key_id, secret = credentials
        return k8s.core.v1.Secret(
            f"{self._name}-s3-{ns}",
            metadata={"name": S3_SECRET_NAME, "namespace": self._namespace(ns), "labels": standard_labels(S3_SECRET_NAME)},
            type="Opaque",
            string_data={
                "AWS_ACCESS_KEY_ID": key_id,
                "AWS_SECRET_ACCESS_KEY": secret,
                "AWS_DEFAULT_REGION": pulumi.Output.secret(a.weight_caches.s3.region),
            },
            opts=self._opts(),
        )
