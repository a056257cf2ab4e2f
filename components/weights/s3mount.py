"""Optional mount of the S3 weight bucket as a file system: csi-s3 with GeeseFS.

`weightCaches.s3.mount.enabled` installs the csi-s3 chart (driver `ru.yandex.s3.csi`)
in its own namespace, a StorageClass, and for the existing weights bucket one
**static** PersistentVolume per namespace that reads from S3, each pre-bound both
ways to the claim `model-weights-s3-mount` of that namespace (like the NFS share: a
PV binds exactly one claim). The PVs use reclaim policy Retain and were never
provisioned by the driver, so deleting a claim or a PV never deletes the bucket or
an object in it.

Triton keeps reading its `s3://` URL (weights.py): its S3 client copies a model
repository to local disk at load with parallel requests and needs no FUSE mount on
GPU nodes. The mount is for readers that want a POSIX path, such as a Model
Analyzer Job or a Ray worker; they mount the claim read-only.

The node plugin mounts FUSE on the host, so it runs privileged: only in the chart's
own namespace, which the policy pack (`privilegedNamespaces`) allows. Credentials
go to the driver through our own Secret there (from Pulumi secrets); the chart's
Secret (credentials in Helm values) and StorageClass are switched off.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s

from inference_platform.core import common, versions
from inference_platform.core import endpoints as ep
from inference_platform.core.common import resource_opts, standard_labels, with_node_selector
from inference_platform.gpu.node_labels import group_taints, tolerations
from inference_platform.settings.cluster import NodeGroup
from inference_platform.settings.weights import S3Cache
from inference_platform.timing.estimates import GroupEstimate
from inference_platform.timing.readiness import chart_timeout

NAMESPACE = ep.CSI_S3_NAMESPACE
DRIVER = "ru.yandex.s3.csi"
CLAIM_NAME = "model-weights-s3-mount"
SECRET_NAME = "csi-s3-weights"
STORAGE_CLASS = "csi-s3"
MOUNTER = "geesefs"
NAMESPACE_LABEL = "inference-platform/weights-namespace"


# --------------------------------------------------------------------------- plain functions


def volume_handle(bucket: str, prefix: str) -> str:
    """The driver's volume id: `bucket` or `bucket/prefix` (split at the first slash)."""
    prefix = prefix.strip("/")
    return f"{bucket}/{prefix}" if prefix else bucket


def csi_s3_values(node_groups: Sequence[NodeGroup], system_node_selector: Optional[dict[str, str]] = None) -> dict[str, Any]:
    """Values of the csi-s3 chart: driver, node plugin and provisioner only; the provisioner on the
    system group (csi-s3 0.43.7 templates/provisioner.yaml: .Values.nodeSelector, its only user)."""
    values: dict[str, Any] = {
        # Our Secret and StorageClass instead: the chart would take the keys as plain values.
        "secret": {"create": False, "name": SECRET_NAME},
        "storageClass": {"create": False},
    }
    # Readers may run on any node, GPU nodes included.
    node = tolerations(group_taints(node_groups))
    if node:
        values["tolerations"] = {"node": node}
    return with_node_selector(values, system_node_selector or {}, "nodeSelector")


def secret_refs() -> dict[str, dict[str, str]]:
    """The secrets the node plugin reads: NodeStageVolume mounts, NodePublishVolume re-mounts a dead stage.

    The CSIDriver has attachRequired false, so there is no controller-publish step.
    """
    ref = {"name": SECRET_NAME, "namespace": NAMESPACE}
    return {"nodeStageSecretRef": dict(ref), "nodePublishSecretRef": dict(ref)}


def driver_secret_data(cfg: S3Cache, access_key_id: pulumi.Input[str], secret_access_key: pulumi.Input[str]) -> dict[str, Any]:
    """The Secret's keys as the driver reads them (pkg/s3 NewClientFromSecret); every value a Pulumi secret."""
    return {
        "accessKeyID": access_key_id,
        "secretAccessKey": secret_access_key,
        "endpoint": pulumi.Output.secret(cfg.endpoint),
        "region": pulumi.Output.secret(cfg.region),
    }


def storage_class_parameters(cfg: S3Cache) -> dict[str, str]:
    params = {"mounter": MOUNTER, "options": cfg.mount.mount_options}
    for step in ("provisioner", "node-stage", "node-publish"):
        params[f"csi.storage.k8s.io/{step}-secret-name"] = SECRET_NAME
        params[f"csi.storage.k8s.io/{step}-secret-namespace"] = NAMESPACE
    return params


# --------------------------------------------------------------------------- component


class S3BucketMount(pulumi.ComponentResource):
    """csi-s3 release, its credentials Secret, a StorageClass, and a static PV and claim per namespace.

    A part of WeightCaches: its children inherit the Kubernetes provider, and wait for what
    `opts.depends_on` names, through their parent."""

    def __init__(
        self,
        name: str,
        cfg: S3Cache,
        bucket: pulumi.Input[str],
        credentials: tuple[pulumi.Output, pulumi.Output],
        namespaces: Mapping[str, pulumi.Input[str]],
        node_groups: Sequence[NodeGroup],
        cold_start: Sequence[GroupEstimate],
        production: bool,
        opts: pulumi.ResourceOptions,
        system_node_selector: Optional[dict[str, str]] = None,
    ):
        super().__init__("inference-platform:s3mount:S3BucketMount", name, None, opts)
        self._name, self._prod = name, production
        deps = opts.depends_on
        self._after = [deps] if isinstance(deps, pulumi.Resource) else list(deps or ())
        # The node plugin mounts FUSE on the host: privileged, in this namespace only.
        namespace = common.namespace(f"{name}-namespace", NAMESPACE, self._opts(), app="csi-s3", pod_security="privileged")
        self.secret = k8s.core.v1.Secret(
            f"{name}-secret",
            metadata={"name": SECRET_NAME, "namespace": NAMESPACE, "labels": standard_labels(SECRET_NAME)},
            type="Opaque",
            string_data=driver_secret_data(cfg, *credentials),
            opts=self._opts(depends_on=[namespace]),
        )
        chart = versions.CSI_S3
        values = csi_s3_values(node_groups, system_node_selector)
        self.release = common.helm_release(
            f"{name}-release", "csi-s3", chart, NAMESPACE, values,
            self._opts(depends_on=[namespace, self.secret]),
            timeout_seconds=chart_timeout(chart.name, values, cold_start),
        )
        # Retain: a volume provisioned through this class keeps its bucket when its claim goes.
        self.storage_class = k8s.storage.v1.StorageClass(
            f"{name}-storageclass",
            metadata={"name": STORAGE_CLASS, "labels": standard_labels(STORAGE_CLASS)},
            provisioner=DRIVER,
            parameters=storage_class_parameters(cfg),
            reclaim_policy="Retain",
            allow_volume_expansion=False,
            opts=self._opts(depends_on=[self.release]),
        )
        handle = pulumi.Output.from_input(bucket).apply(lambda b: volume_handle(b, cfg.mount.prefix))
        self.claims = {ns: self._claim(ns, namespace, cfg, handle) for ns, namespace in namespaces.items()}
        self.register_outputs({"release": self.release.name, "storageClass": STORAGE_CLASS, "volumeHandle": handle})

    def _opts(self, *, protect: bool = False, depends_on=(), **extra) -> pulumi.ResourceOptions:
        opts = resource_opts(self, protect=protect and self._prod, depends_on=depends_on)
        return pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(**extra)) if extra else opts

    def _claim(self, ns: str, namespace: pulumi.Input[str], cfg: S3Cache, handle: pulumi.Output[str]) -> pulumi.Resource:
        labels = standard_labels(CLAIM_NAME, **{NAMESPACE_LABEL: ns})
        size = cfg.mount.storage_size
        # Same volume handle in every namespace: the kubelet stages it once per node and
        # bind-mounts it into each pod that uses a claim.
        pv = k8s.core.v1.PersistentVolume(
            f"{self._name}-pv-{ns}",
            metadata={"labels": labels},
            spec={
                "capacity": {"storage": size},
                # The driver supports only multi-node multi-writer; readers mount the claim read-only.
                "accessModes": ["ReadWriteMany"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": STORAGE_CLASS,
                "csi": {
                    "driver": DRIVER,
                    "volumeHandle": handle,
                    "volumeAttributes": {"mounter": MOUNTER, "options": cfg.mount.mount_options},
                    **secret_refs(),
                },
                "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": ns, "name": CLAIM_NAME},
            },
            # The CSIDriver object and node plugin come with the chart.
            opts=self._opts(protect=True, depends_on=[self.release, self.secret, self.storage_class]),
        )
        return k8s.core.v1.PersistentVolumeClaim(
            f"{self._name}-pvc-{ns}",
            metadata={"name": CLAIM_NAME, "namespace": namespace, "labels": labels},
            spec={
                "accessModes": ["ReadWriteMany"],
                "storageClassName": STORAGE_CLASS,
                "volumeName": pv.metadata["name"],
                "resources": {"requests": {"storage": size}},
            },
            # volumeName is immutable: a new PV means a new claim, and the fixed name must be free first.
            opts=self._opts(protect=True, delete_before_replace=True),
        )
