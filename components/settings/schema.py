"""The stack configuration schema: typed, validated, defaulted.

This is the only module that reads ``pulumi.Config``. Every key of a stack file
lives under the ``inference-platform:`` namespace and is described here; the
README's configuration reference is generated from these docstrings
(``python -m platformctl docs``).

Validation runs in two passes before any resource is declared: pydantic checks
shape, types and ranges; ``cross_checks`` checks what one part of the file says
about another (weights, references, duplicates). Both report problems as
``ConfigError`` naming the stack file, the key path, what was wrong and what is
allowed.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path as FsPath
from typing import Annotated, Any, Iterable, Literal, Mapping, Optional, Union

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from inference_platform.core import driver_support, grammar
from inference_platform.core.driver_support import OsId
from inference_platform.core.endpoints import PLATFORM_NAMESPACES
from inference_platform.core.node_contract import magnum_group_selector

NAMESPACE = "inference-platform"


def _checked(check, *args) -> AfterValidator:
    return AfterValidator(lambda v: check(v, *args))


def _path_float(value: Any) -> Any:
    # `pulumi config set --path key 0.5` (no --type) stores the decimal as a string; that
    # form, and only it, is read as a number.
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]+\.[0-9]+", value):
        return float(value)
    return value


def _top_level_bool(value: Any) -> Any:
    # Pulumi passes every top-level value as a string; `pulumi config set production true` writes "true".
    return {"true": True, "false": False}.get(value, value) if isinstance(value, str) else value


def _labels(labels: dict[str, str]) -> dict[str, str]:
    for k, v in labels.items():
        grammar.qualified_key(k)
        grammar.label_value(v)
    return labels


# Directories an upload must never walk: the file system's root and the system's own trees.
SYSTEM_DIRECTORIES = frozenset(FsPath(p) for p in (
    "/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib64", "/media", "/mnt", "/opt", "/proc",
    "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/var",
))


def upload_source(value: str) -> str:
    """An upload source: an existing, readable directory (relative to the project, where
    `pulumi up` runs), neither a system directory nor inside /proc, /sys or /dev."""
    if not value or grammar.CONTROL.search(value):
        raise ValueError(f"{value!r} is not a directory path")
    path = FsPath(value).expanduser()
    resolved = path.resolve()
    if resolved in SYSTEM_DIRECTORIES or resolved == FsPath.home().resolve() or resolved.parts[1:2] in (("proc",), ("sys",), ("dev",)):
        raise ValueError(f"{value!r} is the system directory {resolved}; upload a model-repository directory")
    if not resolved.is_dir():
        raise ValueError(f"{value!r} is not an existing directory (relative paths start at the project directory)")
    try:
        next(iter(os.scandir(resolved)), None)
    except OSError as err:
        raise ValueError(f"{value!r} cannot be read: {err.strerror}") from None
    return value


# String types named by the grammar of where they go (see grammar.py for what each allows).
DnsLabel = Annotated[str, AfterValidator(grammar.dns_label)]
ShortName = Annotated[str, _checked(grammar.dns_label, 40)]
Subdomain = Annotated[str, AfterValidator(grammar.dns_subdomain)]
Host = Annotated[str, AfterValidator(grammar.hostname)]
HostOrIp = Annotated[str, AfterValidator(grammar.host_or_ip)]
Text = Annotated[str, AfterValidator(grammar.text)]
Quantity = Annotated[str, AfterValidator(grammar.positive_quantity)]
Image = Annotated[str, AfterValidator(grammar.image_reference)]
RelativePath = Annotated[str, AfterValidator(grammar.relative_path)]
Cidr = Annotated[str, AfterValidator(grammar.cidr)]
HttpsUrl = Annotated[str, AfterValidator(grammar.url)]
# Numbers: finite (ConfigDict allow_inf_nan=False), strict, plus the decimal-string form of `--path`.
Number = Annotated[float, BeforeValidator(_path_float)]
Labels = Annotated[dict[str, str], AfterValidator(_labels)]
# A Triton model name as its model repositories and configs take it.
TritonModelName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][-A-Za-z0-9_.]{0,127}$")]

GpuModel = Literal[
    "A100-40GB", "A100-80GB", "H100-80GB", "H100-94GB", "H200-141GB",
    "A30-24GB", "L40S-48GB", "L4-24GB", "T4-16GB",
]
# Node group roles Magnum gives its own groups (extra NodeGroups use their name as role).
MAGNUM_RESERVED_ROLES = frozenset({"worker", "master", "default-worker", "default-master"})
MIG_CAPABLE: frozenset[str] = frozenset(
    {"A100-40GB", "A100-80GB", "H100-80GB", "H100-94GB", "H200-141GB", "A30-24GB"}
)


class Model(BaseModel):
    """Base of every settings object: camelCase keys, frozen, unknown keys refused."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=True,
        extra="forbid",
        use_attribute_docstrings=True,
        validate_default=True,
        strict=True,
        allow_inf_nan=False,
    )

    @model_validator(mode="before")
    @classmethod
    def _refuse_unknown_keys(cls, data: Any) -> Any:
        # pydantic's own message for extra keys names no alternatives; this one does.
        if isinstance(data, dict):
            for key, value in data.items():
                if value is None:
                    raise PydanticCustomError(
                        "null_value", "null is not a value; remove the key {key!r} to use its default", {"key": str(key)})
            known = {f.alias or n for n, f in cls.model_fields.items()} | set(cls.model_fields)
            for key in data:
                if key not in known:
                    allowed = ", ".join(sorted(f.alias or n for n, f in cls.model_fields.items()))
                    raise PydanticCustomError(
                        "unknown_key",
                        "unknown key; allowed keys here: {allowed}",
                        {"key": str(key), "allowed": allowed},
                    )
        return data


def _mode_settings(mode_key: str, mode: str, wanted: str, key: str, value: Any, needs: str) -> None:
    """Settings that belong to one mode: required with it, refused with any other."""
    if mode == wanted and value is None:
        raise ValueError(f"{mode_key} '{wanted}' needs {needs}")
    if mode != wanted and value is not None:
        raise ValueError(f"{key} applies to {mode_key} '{wanted}' only, {mode_key} is '{mode}'")


# --------------------------------------------------------------------------- cluster


class Taint(Model):
    key: Annotated[str, AfterValidator(grammar.qualified_key)]
    """Taint key."""
    value: Annotated[str, AfterValidator(grammar.label_value)] = ""
    """Taint value (may be empty)."""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = "NoSchedule"
    """Taint effect."""


class GpuSharing(Model):
    mode: Literal["none", "mig", "time-slicing", "mps"] = "none"
    """How one physical GPU is shared: `none` (whole GPUs), `mig` (hardware partitions), `time-slicing` or `mps` (replicas of one GPU)."""
    mig_strategy: Optional[Literal["single", "mixed"]] = None
    """MIG only: `single` (all slices alike, advertised as `nvidia.com/gpu`) or `mixed` (advertised as `nvidia.com/mig-<profile>`). Default `single`."""
    mig_profile: Optional[Union[str, dict[str, int]]] = None
    """MIG only: a named mig-parted profile (e.g. `all-1g.10gb`) or a custom mix per GPU, e.g. `{1g.10gb: 2, 3g.40gb: 1}`."""
    replicas: Optional[int] = Field(default=None, ge=2, le=48)
    """Time-slicing / MPS only: how many workloads share one GPU (2-48)."""
    rename_by_default: bool = False
    """Time-slicing / MPS only: advertise shared GPUs as `nvidia.com/gpu.shared` instead of `nvidia.com/gpu`."""

    @model_validator(mode="after")
    def _fields_match_mode(self) -> "GpuSharing":
        if self.mode == "mig":
            if self.mig_profile is None:
                raise ValueError("mode 'mig' needs migProfile (a profile name such as all-1g.10gb, or a mix such as {1g.10gb: 7})")
            if self.replicas is not None:
                raise ValueError("replicas applies to time-slicing and mps only, not mig")
        elif self.mode in ("time-slicing", "mps"):
            if self.replicas is None:
                raise ValueError(f"mode '{self.mode}' needs replicas (2-48 workloads per GPU)")
            if self.mig_profile is not None or self.mig_strategy is not None:
                raise ValueError("migProfile and migStrategy apply to mode 'mig' only")
        elif self.mig_profile is not None or self.mig_strategy is not None or self.replicas is not None:
            raise ValueError("mode 'none' takes no migProfile, migStrategy or replicas; set mode to mig, time-slicing or mps")
        return self

    @property
    def effective_mig_strategy(self) -> str:
        return self.mig_strategy or "single"


class GpuSpec(Model):
    model: GpuModel
    """GPU model of every node in the group."""
    per_node: int = Field(default=1, ge=1, le=16)
    """Physical GPUs per node."""
    sharing: GpuSharing = GpuSharing()
    """GPU sharing profile of the group."""

    @model_validator(mode="after")
    def _mig_needs_capable_model(self) -> "GpuSpec":
        if self.sharing.mode == "mig" and self.model not in MIG_CAPABLE:
            raise ValueError(
                f"GPU model {self.model} has no MIG; MIG-capable models: {', '.join(sorted(MIG_CAPABLE))}"
            )
        return self


class NodeGroup(Model):
    name: ShortName
    """Group name (DNS label); services place versions on GPU groups by this name."""
    flavor: Optional[Text] = None
    """OpenStack flavor of the group's nodes (Magnum clusters: required for every group after the first, which defaults to the template's flavor)."""
    image: Optional[Text] = None
    """Magnum only: Glance image of the group's nodes (default: the cluster template's image)."""
    os: Optional[OsId] = None
    """OS of the group's nodes, which decides the GPU driver modes that work (README: OS and GPU driver mode). Mode `magnum`: default the template's `os`; required with `image` on a GPU group. Mode `existing`: required on GPU groups while the GPU operator installs the driver (driver mode `precompiled` or `compiled`)."""
    min_nodes: int = Field(default=1, ge=0, le=1000)
    """Fewest nodes the cluster autoscaler keeps."""
    max_nodes: int = Field(default=1, ge=1, le=1000)
    """Most nodes the cluster autoscaler may create."""
    initial_nodes: Optional[int] = Field(default=None, ge=0, le=1000)
    """Nodes at creation (default: minNodes)."""
    labels: Labels = {}
    """Extra Kubernetes node labels, which Node Feature Discovery applies: keys with a prefix of your own (not `kubernetes.io`), neither the platform's labels nor the selector's."""
    taints: list[Taint] = []
    """Extra Kubernetes node taints, which Node Feature Discovery applies: keys with a prefix of your own (not `kubernetes.io`), one per key and effect (GPU groups get `nvidia.com/gpu=present:NoSchedule` in addition)."""
    selector: Labels = {}
    """Labels that single out this group's nodes, which the platform's pods select and its node rules match. Mode `existing`: required (the labels the nodes already carry, e.g. a node pool's label). Mode `magnum`: leave unset; the label the Magnum driver gives the group's nodes is used."""
    gpu: Optional[GpuSpec] = None
    """GPUs of the group's nodes; absent for a CPU group."""

    @model_validator(mode="after")
    def _sizes_ordered(self) -> "NodeGroup":
        if self.min_nodes > self.max_nodes:
            raise ValueError(f"minNodes ({self.min_nodes}) exceeds maxNodes ({self.max_nodes}); allowed: minNodes <= initialNodes <= maxNodes")
        if self.initial_nodes is not None and not self.min_nodes <= self.initial_nodes <= self.max_nodes:
            raise ValueError(
                f"initialNodes ({self.initial_nodes}) is outside minNodes..maxNodes ({self.min_nodes}..{self.max_nodes})"
            )
        return self

    @property
    def is_gpu(self) -> bool:
        return self.gpu is not None

    @property
    def advertises_whole_gpus(self) -> bool:
        """GPUs advertised as `nvidia.com/gpu` (not MIG-mixed slices, not renamed shares)."""
        if self.gpu is None:
            return False
        s = self.gpu.sharing
        mixed_mig = s.mode == "mig" and s.effective_mig_strategy == "mixed"
        return not (mixed_mig or (s.mode in ("time-slicing", "mps") and s.rename_by_default))

    @property
    def start_nodes(self) -> int:
        return self.min_nodes if self.initial_nodes is None else self.initial_nodes


class ExistingCluster(Model):
    context: Optional[Text] = None
    """kubeconfig context to use. The kubeconfig itself comes from the secret key `inference-platform:kubeconfig`, or else the ambient one (KUBECONFIG or ~/.kube/config)."""


class MagnumTemplate(Model):
    image: Text = "ubuntu-24.04"
    """Glance image of the cluster's nodes, by the cloud's name for it: an image with the Kubernetes of kubernetesVersion and the `os_distro` property the driver selects on (`ubuntu`, `debian`, `rockylinux`, `flatcar` or `fedora-coreos`). Set `os` to what it is."""
    os: OsId = "ubuntu-24.04"
    """OS of `image` (the platform cannot read it from the image, so it must describe the image): one the Magnum driver boots, and the default OS of every node group (README: OS and GPU driver mode)."""
    external_network_id: Text = "public"
    """External network for floating IPs and load balancers."""
    master_flavor: Text = "m1.large"
    """Flavor of control-plane nodes."""
    flavor: Text = "m1.large"
    """Default flavor of worker nodes."""
    docker_volume_size: int = Field(default=100, ge=10, le=2000)
    """Container storage volume per node, GB (Triton images are large)."""
    network_driver: Literal["calico", "flannel", "cilium"] = "calico"
    """Kubernetes network driver (calico supports NetworkPolicy)."""
    dns_nameserver: Annotated[str, AfterValidator(grammar.ip_address)] = "8.8.8.8"
    """DNS nameserver of the cluster network."""
    master_lb_enabled: bool = True
    """Put a load balancer in front of the API servers."""
    floating_ip_enabled: bool = False
    """Give every node a floating IP."""
    labels: dict[Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,62}$")], Text] = {}
    """Extra Magnum labels, merged over the platform's own (autoscaling and version labels); keys of lowercase letters, digits and `_`."""


class MagnumCluster(Model):
    driver: Literal["clusterApi", "heat"] = "clusterApi"
    """Which Magnum Kubernetes driver the cloud runs: `clusterApi` (Cluster API, the maintained drivers) or `heat` (Magnum's Heat driver: Fedora CoreOS only, deprecated in 2025.1 and removed after 2026.1)."""
    cluster_api_driver: Literal["magnum-cluster-api", "magnum-capi-helm"] = "magnum-cluster-api"
    """With driver `clusterApi`: which Cluster API driver: `magnum-cluster-api` (vexxhost) or `magnum-capi-helm` (openstack/magnum-capi-helm). They read different labels and label nodes differently."""
    template_id: Optional[Text] = None
    """Use this existing ClusterTemplate instead of creating one from `template`."""
    template: MagnumTemplate = MagnumTemplate()
    """ClusterTemplate to create when templateId is not set."""
    kubernetes_version: str = Field(default="v1.34.1", pattern=r"^v1\.[0-9]{1,3}\.[0-9]{1,3}(-rancher[0-9]{1,3})?$")
    """Kubernetes version (the `kube_tag` label). `magnum-cluster-api`: `v1.34.1`. `heat`: a tag of the hyperkube image, `v1.34.1-rancher1` from docker.io/rancher (plain `v1.34.1` only with your own `hyperkube_prefix` or `container_infra_prefix` template label). `magnum-capi-helm` takes the version from the image's `kube_version` property instead: set the same version here."""
    master_count: int = Field(default=1, ge=1, le=7)
    """Control-plane nodes (1, 3 or 5 in practice; 3 for production)."""
    keypair: Optional[Text] = None
    """Nova keypair for node access."""
    fixed_network: Optional[Text] = None
    """Existing network for the cluster, name or ID (default: Magnum creates one). Needs fixedSubnet."""
    fixed_subnet: Optional[Text] = None
    """Existing subnet of fixedNetwork, name or ID; its CIDR (looked up in Neutron) is what may mount the file share."""
    subnet_cidr: Cidr = "10.0.0.0/24"
    """CIDR of the node subnet Magnum creates (the `fixed_subnet_cidr` label), which may mount the file share. Not with fixedSubnet."""
    api_floating_ip: bool = True
    """A floating IP on the API server's load balancer (`master_lb_floating_ip_enabled`), so that `pulumi up`, which reaches the new cluster with its kubeconfig, can connect from outside the cluster network."""
    api_allowed_cidrs: list[Cidr] = []
    """Source CIDRs allowed to reach the API load balancer (empty: any). `heat` (`master_lb_allowed_cidrs`; Magnum adds the node subnet) and `magnum-capi-helm` (`api_master_lb_allowed_cidrs`) only: `magnum-cluster-api` has no such label. Include where `pulumi up` runs."""

    @property
    def node_labeller(self) -> str:
        """The driver that labels the nodes: `heat`, `magnum-cluster-api` or `magnum-capi-helm`."""
        return "heat" if self.driver == "heat" else self.cluster_api_driver

    @field_validator("master_count")
    @classmethod
    def _odd_masters(cls, v: int) -> int:
        if v % 2 == 0:
            raise ValueError(f"masterCount {v} is even; etcd needs an odd count (1, 3, 5, 7)")
        return v


class ClusterSettings(Model):
    mode: Literal["existing", "magnum"] = "existing"
    """`magnum`: create an OpenStack Magnum cluster; `existing`: use a cluster that already exists."""
    existing: ExistingCluster = ExistingCluster()
    """Settings of mode `existing`."""
    magnum: MagnumCluster = MagnumCluster()
    """Settings of mode `magnum`."""
    gpu_quota: Optional[int] = Field(default=None, ge=0)
    """Most GPUs the stack may run (sum over GPU groups of maxNodes x GPUs per node); unset means no limit."""
    node_groups: list[NodeGroup] = Field(min_length=1)
    """Node groups: at least one; CPU groups have no `gpu` key."""

    @property
    def magnum_labeller(self) -> Optional[str]:
        """The Magnum driver that labels the nodes (`MagnumCluster.node_labeller`), None on an existing cluster."""
        return self.magnum.node_labeller if self.mode == "magnum" else None

    @model_validator(mode="after")
    def _magnum_selectors(self) -> "ClusterSettings":
        # A Magnum cluster's groups are selected by the label its driver puts on their nodes.
        # A selector the user wrote is left for cross_checks to refuse with its key path.
        if self.mode != "magnum":
            return self
        labeller = self.magnum.node_labeller
        groups = [g if g.selector else g.model_copy(update={"selector": magnum_group_selector(labeller, i, g.name)})
                  for i, g in enumerate(self.node_groups)]
        return self.model_copy(update={"node_groups": groups})


# --------------------------------------------------------------------------- GPU operator and cold start


class DriverSettings(Model):
    mode: Literal["precompiled", "compiled", "preinstalled"] = "precompiled"
    """`precompiled`: driver images NVIDIA builds per kernel (fastest node start; Ubuntu only); `compiled`: built on each node (the OSes the GPU operator supports); `preinstalled`: the node image has the driver (any OS). Checked against each GPU group's `os`."""
    branch: str = Field(default="595", pattern=r"^[0-9]{3}$")
    """Driver branch (precompiled: one NVIDIA publishes for the nodes' OS, 580 or 595; 595 only on Ubuntu 26.04) or the major of the pinned driver version (compiled: 595)."""


class GpuOperatorSettings(Model):
    enabled: bool = True
    """Install the NVIDIA GPU operator, and with it Node Feature Discovery, which applies the node groups' labels and taints. Off: the nodes of an existing cluster must carry them already; a Magnum cluster then may not have GPU groups, node labels or taints."""
    driver: DriverSettings = DriverSettings()
    """NVIDIA driver installation."""
    dcgm_exporter: bool = True
    """Run the DCGM exporter (GPU metrics) with its ServiceMonitor."""


class StageSeconds(Model):
    node_boot: int = Field(default=120, ge=0, le=7200)
    """Seconds for a new VM to boot and join the cluster."""
    driver_install: int = Field(default=180, ge=0, le=7200)
    """Seconds for the GPU operator to prepare a node (precompiled drivers)."""
    driver_compile: int = Field(default=300, ge=0, le=7200)
    """Extra seconds to build the driver's kernel module on the node (driver mode `compiled`)."""
    image_pull: int = Field(default=360, ge=0, le=7200)
    """Seconds to pull and extract a Triton image (about 360 for 20 GB gzip layers, 150 with zstd)."""
    weight_fetch: int = Field(default=210, ge=0, le=7200)
    """Seconds Triton needs to download an S3 model repository to local disk before loading it (file-share versions read in place)."""
    model_load: int = Field(default=420, ge=0, le=7200)
    """Seconds for Triton to load the model."""


class ColdStartSettings(Model):
    image_pre_pull: bool = True
    """Pre-pull every Triton image on the GPU groups it runs on, overlapping pulls with driver installation."""
    spare_slots: dict[str, Annotated[int, Field(ge=0, le=64)]] = {}
    """Per GPU group, GPU slots held free by low-priority placeholder pods so a new replica starts at once (0-64 each)."""
    stage_seconds: StageSeconds = StageSeconds()
    """Stage durations used for the plan's cold-start estimate."""


# --------------------------------------------------------------------------- mesh and observability


class GatewayTls(Model):
    enabled: bool = False
    """Serve HTTPS on the ingress gateway."""
    secret_name: Optional[Subdomain] = None
    """Kubernetes TLS Secret (in istio-system) holding the certificate; required when enabled."""

    @model_validator(mode="after")
    def _secret_when_enabled(self) -> "GatewayTls":
        if self.enabled and not self.secret_name:
            raise ValueError("tls.enabled needs secretName (a kubernetes.io/tls Secret in istio-system)")
        return self


class KialiOpenId(Model):
    issuer_uri: HttpsUrl
    """The identity provider's issuer URL (Kiali reads its discovery document)."""
    client_id: Text
    """Kiali's client id at the identity provider. The client secret goes into the Secret `kiali` (key `oidc-secret`) in istio-system, created by the identity-provider owner."""
    username_claim: Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.:-]{0,62}$")] = "sub"
    """Token claim shown as the user name."""


class MeshSettings(Model):
    enabled: bool = True
    """Install Istio (base, istiod, ingress gateway)."""
    gateway_annotations: dict[Annotated[str, _checked(grammar.qualified_key, "annotation key")],
                              Annotated[str, AfterValidator(grammar.annotation_value)]] = {}
    """Annotations of the ingress gateway's LoadBalancer Service (e.g. Octavia settings)."""
    tls: GatewayTls = GatewayTls()
    """TLS of the customer Gateway."""
    tracing_sampling_percent: Number = Field(default=1.0, ge=0.0, le=100.0)
    """Percent of requests traced to Jaeger."""
    jaeger_storage: Literal["memory", "persistent"] = "memory"
    """Jaeger trace storage."""
    jaeger_storage_size: Quantity = "10Gi"
    """Volume size for persistent Jaeger storage."""
    kiali_auth: Literal["token", "openid", "anonymous"] = "token"
    """Kiali login strategy; `anonymous` is refused in production stacks."""
    kiali_openid: Optional[KialiOpenId] = None
    """Identity provider of Kiali's `openid` strategy (required with it)."""

    @model_validator(mode="after")
    def _openid_settings(self) -> "MeshSettings":
        _mode_settings("kialiAuth", self.kiali_auth, "openid", "kialiOpenid", self.kiali_openid,
                       "kialiOpenid.issuerUri and kialiOpenid.clientId")
        return self


class AlertThresholds(Model):
    queue_time_ms: Number = Field(default=100.0, ge=0.001, le=600000)
    """Average Triton queue time above which the queue-time alert fires, milliseconds (0.001-600000)."""
    failure_ratio: Number = Field(default=0.05, ge=0.0001, lt=1)
    """Share of failed inference requests above which the failure alert fires (0.0001 to below 1)."""
    gpu_memory_ratio: Number = Field(default=0.95, ge=0.01, le=1)
    """GPU framebuffer use above which the GPU memory alert fires."""


EMAIL_ADDRESS = r"^[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?)+$"


class WebhookReceiver(Model):
    """Alerts POSTed as Alertmanager's webhook JSON; the URL is the receiver's secret."""

    send_resolved: bool = True
    """Also send a notification when the alert clears."""


class SlackReceiver(Model):
    """Alerts posted to a Slack channel; the incoming-webhook URL is the receiver's secret."""

    channel: str = Field(pattern=r"^[#@][a-z0-9._-]{1,80}$")
    """Channel (`#name`) or user (`@name`) to post to."""
    send_resolved: bool = True
    """Also post when the alert clears."""


class EmailReceiver(Model):
    """Alerts e-mailed through an SMTP relay; the SMTP password is the receiver's secret."""

    to: str = Field(pattern=EMAIL_ADDRESS)
    """Recipient address."""
    from_: str = Field(alias="from", pattern=EMAIL_ADDRESS)
    """Sender address."""
    smarthost: str = Field(pattern=r"^[A-Za-z0-9]([-A-Za-z0-9.]{0,251}[A-Za-z0-9])?:[0-9]{1,5}$")
    """SMTP relay as `host:port`, e.g. `smtp.example.com:587`."""
    auth_username: Annotated[str, _checked(grammar.text, 255)]
    """SMTP user name (the password is the receiver's secret)."""
    require_tls: bool = True
    """Refuse to send unless the relay offers STARTTLS."""


class PagerDutyReceiver(Model):
    """Alerts sent to a PagerDuty service through Events API v2; the integration (routing) key is the receiver's secret."""

    send_resolved: bool = True
    """Resolve the PagerDuty incident when the alert clears."""


class AlertReceiver(Model):
    name: Annotated[str, _checked(grammar.dns_label, 40)]
    """Receiver name (DNS label), referred to by `critical` and `warning`; its secret is `alertReceiverSecrets.<name>`."""
    webhook: Optional[WebhookReceiver] = None
    """Send to a webhook (secret: its URL)."""
    slack: Optional[SlackReceiver] = None
    """Send to Slack (secret: the incoming-webhook URL)."""
    email: Optional[EmailReceiver] = None
    """Send e-mail (secret: the SMTP password)."""
    pagerduty: Optional[PagerDutyReceiver] = None
    """Send to PagerDuty (secret: the Events API v2 routing key)."""

    @model_validator(mode="after")
    def _one_kind(self) -> "AlertReceiver":
        kinds = [k for k in RECEIVER_KINDS if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError(f"a receiver has exactly one of {', '.join(RECEIVER_KINDS)}; found {', '.join(kinds) or 'none'}")
        return self

    @property
    def kind(self) -> str:
        return next(k for k in RECEIVER_KINDS if getattr(self, k) is not None)


RECEIVER_KINDS = ("webhook", "slack", "email", "pagerduty")


class AlertingSettings(Model):
    receivers: list[AlertReceiver] = Field(default=[], max_length=20)
    """Where alerts go: webhook, Slack, e-mail or PagerDuty receivers. With none, Alertmanager keeps every alert to itself (receiver `null`)."""
    critical: list[Annotated[str, _checked(grammar.dns_label, 40)]] = []
    """Receivers of alerts with severity `critical` (each gets every one)."""
    warning: list[Annotated[str, _checked(grammar.dns_label, 40)]] = []
    """Receivers of alerts with severity `warning`."""
    repeat_interval: str = Field(default="4h", pattern=r"^[1-9][0-9]{0,3}(m|h|d)$")
    """How often a firing alert is sent again, e.g. `4h`."""


class ObservabilitySettings(Model):
    enabled: bool = True
    """Install kube-prometheus-stack, prometheus-adapter, Loki, Alloy and Grafana."""
    prometheus_retention: str = Field(default="15d", pattern=r"^[1-9][0-9]{0,5}(h|d|w|y)$")
    """How long Prometheus keeps samples."""
    prometheus_storage_size: Quantity = "50Gi"
    """Prometheus volume size."""
    storage_class: Optional[Subdomain] = None
    """StorageClass of observability volumes (default: the cluster default)."""
    loki_storage: Literal["filesystem", "s3"] = "filesystem"
    """Loki chunk storage: a volume, or the S3 weight cache's endpoint."""
    loki_storage_size: Quantity = "20Gi"
    """Loki volume size (filesystem storage)."""
    loki_retention: str = Field(default="168h", pattern=r"^[1-9][0-9]{0,5}(h|d|w)$")
    """How long Loki keeps logs."""
    alerts: AlertThresholds = AlertThresholds()
    """Alert thresholds."""
    alerting: AlertingSettings = AlertingSettings()
    """Alertmanager receivers and which severities reach them (README: Routing alerts)."""


# --------------------------------------------------------------------------- user interfaces


def _oauth_scope(value: str) -> str:
    # RFC 6749 3.3 scope-token; Grafana joins the scopes with spaces.
    if not re.fullmatch(r"[\x21\x23-\x5b\x5d-\x7e]{1,128}", value):
        raise ValueError(f"{json.dumps(value)} is not an OAuth scope; allowed: 1-128 printable ASCII characters "
                         "without spaces, '\"' or '\\'")
    return value


class GrafanaOidc(Model):
    auth_url: HttpsUrl
    """The identity provider's authorization endpoint (Grafana `auth.generic_oauth` `auth_url`)."""
    token_url: HttpsUrl
    """The identity provider's token endpoint (`token_url`)."""
    api_url: HttpsUrl
    """The identity provider's user-info endpoint (`api_url`)."""
    client_id: Text
    """Grafana's client id at the identity provider. The client secret is the stack secret `grafanaOidcClientSecret`; register `https://<ui.grafana.host>/login/generic_oauth` as the redirect URL."""
    scopes: list[Annotated[str, AfterValidator(_oauth_scope)]] = Field(default=["openid", "email", "profile"], min_length=1)
    """OAuth scopes Grafana asks for (printable ASCII without spaces, `"` or `\\`)."""
    role_attribute_path: Optional[Text] = None
    """JMESPath over the user info that yields the Grafana role (`Admin`, `Editor` or `Viewer`); unset: every user signs in as a Viewer."""


class GrafanaUi(Model):
    host: Host
    """Host name Grafana is served on through the ingress gateway."""
    auth: Literal["admin", "oidc"] = "admin"
    """Login: `admin` (user `admin`, password in the stack output `grafanaAdminPassword`) or `oidc` (an identity provider, with the admin login kept for recovery)."""
    oidc: Optional[GrafanaOidc] = None
    """Identity provider of auth `oidc` (required with it)."""

    @model_validator(mode="after")
    def _oidc_settings(self) -> "GrafanaUi":
        _mode_settings("auth", self.auth, "oidc", "oidc", self.oidc,
                       "oidc.authUrl, oidc.tokenUrl, oidc.apiUrl and oidc.clientId")
        return self


class KialiUi(Model):
    host: Host
    """Host name Kiali is served on through the ingress gateway (at `/`; login as `mesh.kialiAuth` says)."""


class UiSettings(Model):
    grafana: Optional[GrafanaUi] = None
    """Serve Grafana on a host of its own (off when unset: reach it with `kubectl port-forward`)."""
    kiali: Optional[KialiUi] = None
    """Serve Kiali on a host of its own (off when unset). Jaeger has no host: its traces are read in Grafana (Jaeger datasource) and Kiali."""
    allow_plain_http: bool = False
    """Serve the UI hosts over plain HTTP while `mesh.tls` is off; non-production stacks only (logins then cross the network unencrypted)."""

    @property
    def hosts(self) -> dict[str, str]:
        """UI name -> host, for the UIs given a host."""
        return {name: ui.host for name, ui in (("grafana", self.grafana), ("kiali", self.kiali)) if ui is not None}


# --------------------------------------------------------------------------- weight caches


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


# --------------------------------------------------------------------------- services


class JwtAuth(Model):
    issuer: Text
    """Token issuer (`iss`)."""
    jwks_uri: HttpsUrl
    """URL of the issuer's JSON Web Key Set."""
    audiences: list[Text] = []
    """Accepted audiences (`aud`); empty accepts any."""


class AuthSettings(Model):
    mode: Literal["basic", "jwt", "none"] = "basic"
    """`basic`: generated credentials checked at the mesh; `jwt`: tokens from an identity provider; `none`: open (non-production stacks only)."""
    realm: Optional[Annotated[str, AfterValidator(grammar.header_token)]] = None
    """Basic Auth realm (default: the service name): 1-64 printable ASCII characters without `"` or `\\`."""
    jwt: Optional[JwtAuth] = None
    """Identity provider, for mode `jwt`."""

    @model_validator(mode="after")
    def _jwt_needs_issuer(self) -> "AuthSettings":
        _mode_settings("mode", self.mode, "jwt", "jwt", self.jwt, "jwt.issuer and jwt.jwksUri")
        return self


def _triton_model_label(value: str) -> str:
    try:
        usable = bool(grammar.label_value(value))  # a label value may be empty; a model name may not
    except ValueError:
        usable = False
    if not usable:
        raise ValueError(f"{value!r} is not a Triton model name usable as a Kubernetes label value; allowed: "
                         "1-63 characters of [A-Za-z0-9-_.], starting and ending alphanumeric")
    return value


# A Triton model name used as a Prometheus label matcher through a Kubernetes label selector.
TritonModelLabel = Annotated[str, AfterValidator(_triton_model_label)]


class Autoscaling(Model):
    enabled: bool = True
    """Scale each version with an HPA on Triton's average queue time."""
    min_replicas: int = Field(default=1, ge=1, le=1000)
    """Fewest replicas per version."""
    max_replicas: int = Field(default=3, ge=1, le=1000)
    """Most replicas per version."""
    queue_time_target_us: int = Field(default=50000, ge=100, le=600_000_000)
    """Target per-pod average queue time, microseconds."""
    scale_down_stabilization_seconds: int = Field(default=300, ge=0, le=3600)
    """How long load must stay low before replicas are removed."""
    queue_time_model: Optional[TritonModelLabel] = None
    """Triton model whose queue time the HPA scales on (e.g. the bottleneck step of an ensemble). Default: the worst model of each pod, i.e. the highest per-model queue time. It becomes a selector on Triton's `model` label, so it must also be a Kubernetes label value (at most 63 characters of [A-Za-z0-9-_.], starting and ending alphanumeric). A name no pod serves gives the HPA no metric, and it keeps the current replica count."""

    @model_validator(mode="after")
    def _ordered(self) -> "Autoscaling":
        if self.min_replicas > self.max_replicas:
            raise ValueError(f"minReplicas ({self.min_replicas}) exceeds maxReplicas ({self.max_replicas})")
        return self


# Envoy retry conditions that only fire when the request never reached Triton (or Triton
# refused it before running it): retrying them never runs a model twice.
SAFE_RETRY_CONDITIONS = "connect-failure,refused-stream,unavailable"


class Retries(Model):
    attempts: int = Field(default=2, ge=0, le=10)
    """Retries per request after the first try (0 disables retries: Istio then sets no retry policy at all, rather than its own default of 2 retries)."""
    per_try_timeout_seconds: Optional[Number] = Field(default=None, ge=0.001, le=3600)
    """Timeout of each try, seconds (0.001-3600; default: the service's `timeoutSeconds`, so a long inference is never cut and re-run). At most `timeoutSeconds`: the route timeout bounds all tries together. A shorter per-try timeout retries a slow try only if `retryOn` holds `5xx`, `gateway-error` or `reset` (Envoy counts an expired try as a reset), which runs the model again."""
    retry_on: Annotated[str, AfterValidator(grammar.retry_conditions)] = SAFE_RETRY_CONDITIONS
    """Envoy retry conditions, comma-separated (HTTP ones of `x-envoy-retry-on`, gRPC ones of `x-envoy-retry-grpc-on`, or HTTP status codes). The default retries only requests Triton never ran: `connect-failure` (no connection to the pod), `refused-stream` (HTTP/2 REFUSED_STREAM, sent before processing), `unavailable` (gRPC status 14, which Triton returns while it is not ready). `5xx`, `gateway-error`, `reset` and status codes also retry requests that reached Triton and may have run on a GPU."""


class Mirror(Model):
    version: DnsLabel
    """Version that receives a copy of live traffic (its responses are discarded)."""
    percent: Number = Field(default=100.0, ge=0.0001, le=100)
    """Share of requests copied."""


class ModelRepository(Model):
    cache: Literal["fileShare", "s3"]
    """Weight cache holding the model repository."""
    path: RelativePath
    """Path inside the file share, or key prefix inside the bucket (relative, no `..`)."""


class GpuRequest(Model):
    group: DnsLabel
    """GPU node group the version runs on."""
    count: int = Field(default=1, ge=1, le=16)
    """GPUs (or GPU slices / shares) per replica."""
    mig_profile: Optional[str] = Field(default=None, pattern=r"^[0-9]g\.[0-9]+gb(\+me)?$")
    """MIG profile of the slice, for groups with MIG strategy `mixed` (e.g. `1g.10gb`)."""


class Resources(Model):
    cpu: Quantity = "4"
    """CPU request per replica."""
    memory: Quantity = "16Gi"
    """Memory request per replica."""
    cpu_limit: Optional[Quantity] = None
    """CPU limit (default: no CPU limit, avoiding throttling); at least the request."""
    memory_limit: Optional[Quantity] = None
    """Memory limit (default: the memory request); at least the request."""
    shm_size: Quantity = "1Gi"
    """Size of the memory-backed /dev/shm."""

    @model_validator(mode="after")
    def _limits_cover_requests(self) -> "Resources":
        for limit, request, key in ((self.cpu_limit, self.cpu, "cpuLimit"), (self.memory_limit, self.memory, "memoryLimit")):
            if limit is not None and grammar.quantity(limit) < grammar.quantity(request):
                raise ValueError(f"{key} {limit} is below the request {request}; allowed: a limit at least the request")
        return self


# --------------------------------------------------------------------------- tuning

# Model Analyzer objectives by stack-file name: Model Analyzer's metric tags
# (model_analyzer/record/types/*.py `tag`).
TUNING_OBJECTIVES = {
    "throughput": "perf_throughput",
    "latencyP99": "perf_latency_p99",
    "latencyP95": "perf_latency_p95",
    "latencyAvg": "perf_latency_avg",
    "gpuMemory": "gpu_used_memory",
    "gpuUtilization": "gpu_utilization",
}
TuningObjective = Literal[tuple(TUNING_OBJECTIVES)]  # type: ignore[valid-type]


class TuningConstraints(Model):
    latency_p99_ms: Optional[Number] = Field(default=None, ge=0.01, le=600000)
    """Latency budget: configurations whose p99 latency exceeds it (milliseconds) are not kept."""
    min_throughput: Optional[Number] = Field(default=None, ge=0.01, le=10_000_000)
    """Configurations below this throughput (inferences per second) are not kept."""
    max_gpu_memory_mb: Optional[int] = Field(default=None, ge=1, le=1_000_000)
    """Configurations using more GPU memory (MB) are not kept."""


class TuningSearch(Model):
    max_instance_count: int = Field(default=5, ge=1, le=16)
    """Most model instances per GPU a configuration may have."""
    max_batch_size: int = Field(default=128, ge=1, le=4096)
    """Largest max_batch_size tried (powers of two from 1)."""
    max_concurrency: int = Field(default=1024, ge=1, le=16384)
    """Highest client concurrency Perf Analyzer drives."""


class TuningGoals(Model):
    objectives: dict[TuningObjective, Annotated[int, Field(ge=1, le=100)]] = Field(  # type: ignore[valid-type]
        default={"throughput": 10}, min_length=1)
    """What to optimise, with relative weights 1-100: throughput, latencyP99, latencyP95, latencyAvg, gpuMemory, gpuUtilization."""
    constraints: TuningConstraints = TuningConstraints()
    """Limits a kept configuration must meet."""
    search: TuningSearch = TuningSearch()
    """Bounds of Model Analyzer's search."""
    keep: int = Field(default=3, ge=1, le=10)
    """How many of the best configurations are written to the weight cache (`<model>/configs/tuned-<id>-<rank>.pbtxt`)."""


class Tuning(TuningGoals):
    model: TritonModelName
    """Triton model to tune, by its name in the version's model repository."""
    deadline_hours: Number = Field(default=6, ge=0.1, le=72)
    """Longest a run may take; then its pod is stopped and the GPU released."""
    run: int = Field(default=1, ge=1, le=1_000_000)
    """Run number: raise it to run again with unchanged settings (a run happens only when the tuning inputs change)."""
    sdk_image: Optional[Image] = None
    """Model Analyzer image (default: the Triton SDK image of the version's Triton release, `<release>-py3-sdk`)."""


class BatchingPreset(Model):
    max_batch_size: Optional[int] = Field(default=None, ge=1, le=4096)
    """The model's max_batch_size in the variant (default: the model's own; dynamic batching of a model whose own is 0 needs one here)."""
    dynamic_batching: bool = True
    """Let Triton combine requests into batches."""
    max_queue_delay_microseconds: int = Field(default=0, ge=0, le=10_000_000)
    """How long a request may wait for others to fill a batch."""
    preferred_batch_sizes: list[Annotated[int, Field(ge=1, le=4096)]] = Field(default=[], max_length=16)
    """Batch sizes the batcher aims for (empty: the largest possible)."""
    instance_count: int = Field(default=1, ge=1, le=16)
    """Model instances (execution copies) per GPU."""
    instance_kind: Literal["gpu", "cpu"] = "gpu"
    """Where the instances run."""

    @model_validator(mode="after")
    def _preferred_within_max(self) -> "BatchingPreset":
        if self.max_batch_size is not None and any(b > self.max_batch_size for b in self.preferred_batch_sizes):
            raise ValueError(f"preferredBatchSizes {self.preferred_batch_sizes} exceed maxBatchSize {self.max_batch_size}; "
                             "allowed: sizes up to maxBatchSize")
        return self


# nvcr.io/nvidia/tritonserver:<YY.MM>-<flavour>: the release names the Triton SDK and TensorRT
# images of the same release (tuning.py).
TRITON_IMAGE = re.compile(r"^(?P<registry>[^@]+)/tritonserver:(?P<release>[0-9]{2}\.[0-9]{2})-[A-Za-z0-9._-]+$")


# Built-in presets; the stack file's tuningPresets add to them or replace one by name.
# latency: batch only what is already queued and run two instances, so a request never
# waits for others; throughput: wait up to 2 ms to fill larger batches.
BUILTIN_PRESETS = {
    "latency": BatchingPreset(max_queue_delay_microseconds=0, instance_count=2),
    "throughput": BatchingPreset(max_queue_delay_microseconds=2000, instance_count=1),
}
PresetName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,39}$")]


class ServicePipeline(Model):
    base_version: DnsLabel
    """The version a new one is built for and copies: its Triton release (image), GPU group and share, weight cache."""
    model: TritonModelName
    """Triton model name of the built engine in the new version's repository."""
    inputs: dict[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.:/-]{0,63}$")],
                 Annotated[list[Annotated[int, Field(ge=1, le=1 << 20)]], Field(min_length=1, max_length=8)]] = Field(min_length=1)
    """The ONNX model's inputs and their dims without the batch dimension, e.g. `{input: [3, 224, 224]}` (the engine's optimisation profile)."""
    max_batch_size: int = Field(default=8, ge=1, le=4096)
    """Largest batch the engine is built for."""
    precision: Literal["fp16", "fp32"] = "fp16"
    """TensorRT precision: fp16 (trtexec --fp16) or fp32."""
    repository_prefix: RelativePath
    """Where new versions are published in the base version's weight cache: `<prefix>/<version>/<model>/...`."""
    canary_weight: int = Field(default=10, ge=1, le=50)
    """Traffic percent the produced stack-file patch gives the new version (taken from the base version)."""
    tuning: TuningGoals = TuningGoals()
    """Model Analyzer objectives, constraints and search of the pipeline's analyse step."""


class ModelPipelineSettings(Model):
    enabled: bool = False
    """Install Argo Workflows (controller only) and a WorkflowTemplate per service with `pipeline` (README "Tuning a model")."""


class ModelControl(Model):
    mode: Literal["none", "poll", "explicit"] = "none"
    """Triton `--model-control-mode`: load all at start, poll the repository, or load only `load`."""
    load: list[Annotated[str, Field(pattern=r"^[A-Za-z0-9][-A-Za-z0-9_.]{0,127}$")]] = []
    """Models to load, mode `explicit` only (model directory names)."""
    poll_seconds: int = Field(default=30, ge=1, le=86400)
    """Repository poll interval, mode `poll`."""

    @model_validator(mode="after")
    def _load_only_explicit(self) -> "ModelControl":
        if self.mode == "explicit" and not self.load:
            raise ValueError("mode 'explicit' needs load: the models to load")
        if self.mode != "explicit" and self.load:
            raise ValueError(f"load applies to mode 'explicit' only, mode is '{self.mode}'")
        return self


# Triton flags a version may set through serverArgs (long option names of tritonserver's
# command-line parser, src/command_line_parser.cc at r25.01; tests/catalogues holds the
# list). Flags the platform sets itself (ports, repository, model control, metrics
# switches) and ones that would reach outside the pod (log-file, directories) are absent.
TRITON_SERVER_FLAGS = frozenset({
    "log-verbose", "log-info", "log-warning", "log-error", "log-format",
    "exit-on-error", "strict-readiness", "exit-timeout-secs",
    "model-load-thread-count", "model-load-retry-count", "model-load-gpu-limit",
    "http-thread-count", "http-header-forward-pattern",
    "grpc-infer-allocation-pool-size", "grpc-infer-response-compression-level",
    "grpc-keepalive-time", "grpc-keepalive-timeout", "grpc-header-forward-pattern",
    "metrics-interval-ms", "metrics-config", "trace-config", "backend-config", "cache-config",
    "rate-limit", "rate-limit-resource", "pinned-memory-pool-byte-size",
    "cuda-memory-pool-byte-size", "min-supported-compute-capability",
    "buffer-manager-thread-count", "host-policy",
})
# Flags whose every occurrence the parser keeps (it appends to a list or a map per backend,
# cache, trace mode, resource, policy or device): they take a list of values. Any other
# flag given twice keeps its last value only, so a list there is refused.
TRITON_REPEATABLE_FLAGS = frozenset({
    "backend-config", "metrics-config", "cache-config", "trace-config", "rate-limit-resource",
    "host-policy", "model-load-gpu-limit", "cuda-memory-pool-byte-size",
})
# Triton waits this long after SIGTERM for in-flight requests; the platform sets it from the
# service's timeoutSeconds, and serverArgs may only raise it.
EXIT_TIMEOUT_FLAG = "exit-timeout-secs"
# Value grammar per flag (Triton's command-line parser): integers, booleans, floats, choices,
# `<device>:<number>` pairs; any other flag takes one printable token.
_TRITON_INT_FLAGS = frozenset({
    "log-verbose", "exit-timeout-secs", "model-load-thread-count", "model-load-retry-count", "http-thread-count",
    "grpc-infer-allocation-pool-size", "grpc-keepalive-time", "grpc-keepalive-timeout", "metrics-interval-ms",
    "pinned-memory-pool-byte-size", "buffer-manager-thread-count",
})
_TRITON_BOOL_FLAGS = frozenset({"log-info", "log-warning", "log-error", "exit-on-error", "strict-readiness"})
_TRITON_CHOICES = {
    "log-format": ("default", "ISO8601"),
    "grpc-infer-response-compression-level": ("none", "low", "medium", "high"),
    "rate-limit": ("execution_count", "off"),
}
_TRITON_PATTERNS = {
    "min-supported-compute-capability": (r"[0-9]{1,3}(\.[0-9]{1,3})?", "a number such as 8.0"),
    "cuda-memory-pool-byte-size": (r"[0-9]{1,3}:[0-9]{1,20}", "<GPU device id>:<bytes>, e.g. 0:67108864"),
    "model-load-gpu-limit": (r"[0-9]{1,3}:(0(\.[0-9]{1,6})?|1(\.0{1,6})?|\.[0-9]{1,6})", "<GPU device id>:<fraction 0-1>, e.g. 0:0.9"),
}
FlagValue = Union[str, list[str]]


def triton_flag_problem(flag: str, value: FlagValue) -> Optional[str]:
    """Why a serverArgs entry is refused, or None."""
    if flag not in TRITON_SERVER_FLAGS:
        return f"Triton flag {flag!r} is not allowed here; allowed: {', '.join(sorted(TRITON_SERVER_FLAGS))}"
    if isinstance(value, list):
        if flag not in TRITON_REPEATABLE_FLAGS:
            return (f"--{flag} takes one value, not a list; lists are for the flags Triton repeats: "
                    f"{', '.join(sorted(TRITON_REPEATABLE_FLAGS))}")
        if not value:
            return f"--{flag} needs at least one value (leave the key out for none)"
        return next((p for p in (_triton_value_problem(flag, v) for v in value) if p), None)
    return _triton_value_problem(flag, value)


def _triton_value_problem(flag: str, value: str) -> Optional[str]:
    if flag in _TRITON_INT_FLAGS and not re.fullmatch(r"[0-9]{1,12}", value):
        return f"--{flag} takes a non-negative integer, not {value!r}"
    if flag in _TRITON_BOOL_FLAGS and value not in ("true", "false"):
        return f"--{flag} takes true or false, not {value!r}"
    if flag in _TRITON_CHOICES and value not in _TRITON_CHOICES[flag]:
        return f"--{flag} takes one of {', '.join(_TRITON_CHOICES[flag])}, not {value!r}"
    if flag in _TRITON_PATTERNS and not re.fullmatch(_TRITON_PATTERNS[flag][0], value):
        return f"--{flag} takes {_TRITON_PATTERNS[flag][1]}, not {value!r}"
    if not re.fullmatch(r"[!-~]{1,1024}", value) or value.startswith("-"):
        return f"--{flag} value {value!r} must be one token of printable ASCII (no spaces, not starting with '-')"
    return None


def _flag_values_as_text(args: Any) -> Any:
    # `pulumi config set --path ...serverArgs.log-verbose 1` stores the integer 1, and
    # `...serverArgs.backend-config[0] ...` a list whose items may be integers too.
    def text(v: Any) -> Any:
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v

    if isinstance(args, dict):
        return {k: [text(i) for i in v] if isinstance(v, list) else text(v) for k, v in args.items()}
    return args


class Version(Model):
    name: Annotated[str, _checked(grammar.dns_label, 20)]
    """Version name (DNS label): the pods' `version` label and the Istio subset."""
    image: Image
    """Triton container image, with a pinned tag or digest."""
    weight: int = Field(ge=0, le=100)
    """Percent of the service's traffic (weights of a service sum to 100; 0 keeps the version deployed without traffic)."""
    model_repository: ModelRepository
    """Where the version's model repository lives."""
    gpu: GpuRequest
    """GPU placement and share of each replica."""
    resources: Resources = Resources()
    """CPU, memory and /dev/shm of each replica."""
    model_control: ModelControl = ModelControl()
    """Triton model control."""
    model_load_seconds: int = Field(default=420, ge=10, le=7200)
    """Expected model load time; the startup probe allows at least this."""
    startup_budget_seconds: int = Field(default=900, ge=30, le=7200)
    """How long the startup probe waits for readiness before restarting the pod."""
    server_args: Annotated[dict[str, FlagValue], BeforeValidator(_flag_values_as_text)] = {}
    """Extra Triton server flags without the leading `--`, e.g. `{log-verbose: "1"}`; only flags the platform does not set itself are allowed (see TRITON_SERVER_FLAGS), each value in that flag's grammar (integer, true/false, a choice, or one printable token). Flags Triton accepts several times (backend-config, metrics-config, cache-config, trace-config, rate-limit-resource, host-policy, model-load-gpu-limit, cuda-memory-pool-byte-size) take a list, rendered as one `--flag=value` per item in order. `exit-timeout-secs` may only raise the platform's value, the service's timeoutSeconds (README "Graceful shutdown")."""
    model_config_name: Optional[str] = Field(default=None, pattern=r"^[A-Za-z0-9][-A-Za-z0-9_.]{0,127}$")
    """Tuned config variant, Triton's `--model-config-name` (from the model's `configs/` folder)."""
    replicas: int = Field(default=1, ge=0, le=1000)
    """Fixed replica count, used only when autoscaling is disabled."""
    autoscaling: Optional[Autoscaling] = None
    """Autoscaling of this version (default: the service's)."""
    tuning: Optional[Tuning] = None
    """Tune this version's model with Model Analyzer: a Job on the version's GPU group and share that writes the best configurations to the weight cache (README "Tuning a model")."""
    llm_backend: Optional[Literal["tensorrtllm", "vllm"]] = None
    """LLM backend the version's models run on (`tensorrtllm`, `vllm`): its LLM dashboard panels are shown, and the GPU memory alert skips its pods, since both engines reserve most GPU memory for their KV cache by design."""

    @field_validator("server_args")
    @classmethod
    def _allowed_flags(cls, args: dict[str, FlagValue]) -> dict[str, FlagValue]:
        for flag, value in args.items():
            problem = triton_flag_problem(flag, value)
            if problem:
                raise ValueError(problem)
        return args

    @model_validator(mode="after")
    def _budget_covers_load(self) -> "Version":
        if self.startup_budget_seconds < self.model_load_seconds:
            raise ValueError(
                f"startupBudgetSeconds ({self.startup_budget_seconds}) is shorter than modelLoadSeconds "
                f"({self.model_load_seconds}); allowed: startupBudgetSeconds >= modelLoadSeconds"
            )
        return self


class Service(Model):
    name: ShortName
    """Service name (DNS label): the Kubernetes Service and, by default, the namespace."""
    namespace: Optional[DnsLabel] = None
    """Namespace (default: the service name); services may share one. Not a system namespace (`default`, `kube-*`) nor one the platform creates (see README)."""
    hosts: list[Host] = Field(min_length=1)
    """Host names served through the customer Gateway (no wildcards)."""
    auth: AuthSettings = AuthSettings()
    """Client authentication at the mesh."""
    autoscaling: Autoscaling = Autoscaling()
    """Autoscaling of every version (a version may override)."""
    timeout_seconds: Number = Field(default=60, ge=0.001, le=3600)
    """Request timeout at the mesh, seconds (0.001-3600): the longest a request may take, all retries included. Triton's exit timeout and the pods' termination grace period follow it, so a rollout or scale-down lets requests of this length finish."""
    retries: Retries = Retries()
    """Retries at the mesh (see README "Timeouts and retries")."""
    mirror: Optional[Mirror] = None
    """Copy a share of live traffic to a shadow version."""
    versions: list[Version] = Field(min_length=1)
    """Deployed versions; weights sum to 100."""
    pipeline: Optional[ServicePipeline] = None
    """The model pipeline (needs modelPipeline.enabled): an Argo WorkflowTemplate that builds, tunes and publishes a new version of this service's model and ends in a stack-file patch for it as a canary."""

    @property
    def k8s_namespace(self) -> str:
        return self.namespace or self.name

    @property
    def per_try_timeout_seconds(self) -> float:
        """Each try's timeout: the one set, or the whole route timeout."""
        per_try = self.retries.per_try_timeout_seconds
        return self.timeout_seconds if per_try is None else per_try

    @property
    def route_timeout_whole_seconds(self) -> int:
        """The route timeout rounded up to whole seconds (Triton's exit timeout is in seconds)."""
        return math.ceil(self.timeout_seconds)

    def timing_problems(self) -> list[tuple[Path, str]]:
        """Retry and shutdown timings that contradict the route timeout (paths relative to the service)."""
        problems: list[tuple[Path, str]] = []
        per_try = self.retries.per_try_timeout_seconds
        if per_try is not None and per_try > self.timeout_seconds:
            problems.append((("retries", "perTryTimeoutSeconds"),
                             f"{per_try:g} s exceeds the service's timeoutSeconds ({self.timeout_seconds:g} s), "
                             "which bounds all tries together; allowed: at most timeoutSeconds (leave it unset for the same value)"))
        for vi, version in enumerate(self.versions):
            exit_timeout = version.server_args.get(EXIT_TIMEOUT_FLAG)
            if isinstance(exit_timeout, str) and int(exit_timeout) < self.route_timeout_whole_seconds:
                problems.append((("versions", vi, "serverArgs", EXIT_TIMEOUT_FLAG),
                                 f"{exit_timeout} s is shorter than the service's timeoutSeconds ({self.timeout_seconds:g} s): "
                                 "a rollout or scale-down would cut requests still within their timeout; "
                                 f"allowed: at least {self.route_timeout_whole_seconds} (or leave it out: the platform sets it)"))
        return problems


# --------------------------------------------------------------------------- policies


class PolicySettings(Model):
    enforcement: dict[str, Literal["mandatory", "advisory", "disabled"]] = {}
    """Per-policy enforcement override for this stack, e.g. `{triton-probes: advisory}`; names as in the README's policy list (`policies/catalog.py`)."""

    @field_validator("enforcement")
    @classmethod
    def _known_policies(cls, v: dict[str, str]) -> dict[str, str]:
        # The catalog imports nothing, so the program needs no Policy SDK for this check.
        from policies.catalog import POLICY_NAMES

        unknown = sorted(set(v) - set(POLICY_NAMES))
        if unknown:
            raise ValueError(f"unknown policy {', '.join(unknown)}; policies: {', '.join(POLICY_NAMES)}")
        return v


# --------------------------------------------------------------------------- the stack


# --------------------------------------------------------------------------- inference graphs

# Triton's tensor data types (model_config.proto DataType, without TYPE_INVALID).
TRITON_DATA_TYPES = ("TYPE_BOOL", "TYPE_UINT8", "TYPE_UINT16", "TYPE_UINT32", "TYPE_UINT64", "TYPE_INT8",
                     "TYPE_INT16", "TYPE_INT32", "TYPE_INT64", "TYPE_FP16", "TYPE_FP32", "TYPE_FP64",
                     "TYPE_STRING", "TYPE_BF16")
# A tensor or model name as Triton's configs and Ray's resource names both take it.
TensorName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")]


class GraphTensor(Model):
    name: TensorName
    """Tensor name, as the graph's callers send or receive it."""
    data_type: Literal[TRITON_DATA_TYPES] = "TYPE_FP32"  # type: ignore[valid-type]
    """Triton data type (`TYPE_FP32`, `TYPE_STRING`, ...)."""
    dims: list[Annotated[int, Field(ge=-1, le=1 << 30)]] = Field(min_length=1, max_length=8)
    """Shape without the batch dimension; -1 for a variable size."""

    @field_validator("dims")
    @classmethod
    def _no_zero(cls, dims: list[int]) -> list[int]:
        if 0 in dims:
            raise ValueError("a dimension of 0 holds nothing; allowed: -1 (variable) or a size of 1 or more")
        return dims


class ReplicaRange(Model):
    min: int = Field(default=1, ge=1, le=100)
    """Fewest replicas (each holds the step's GPU share)."""
    max: int = Field(default=1, ge=1, le=100)
    """Most replicas the step scales to."""

    @model_validator(mode="after")
    def _ordered(self) -> "ReplicaRange":
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) exceeds max ({self.max})")
        return self


class GraphStep(Model):
    name: Annotated[str, _checked(grammar.dns_label, 20)]
    """Step name (DNS label): names its Ray worker group and Serve deployment."""
    model: TritonModelName
    """The Triton model this step runs, as named in its model repository."""
    image: Image
    """Triton image holding the model's backend (with `placement: ray`, also Ray at the pinned version)."""
    model_repository: ModelRepository
    """Where the model repository holding `model` is in a weight cache."""
    gpu: GpuRequest
    """GPU group and share each replica uses."""
    replicas: ReplicaRange = ReplicaRange()
    """Replica range: with `placement: ray`, the step's Serve autoscaling and worker group bounds."""
    resources: Resources = Resources()
    """CPU and memory of each replica."""
    inputs: dict[TensorName, TensorName] = Field(min_length=1)
    """Model input tensor -> graph tensor it reads: a graph input or an earlier step's output."""
    outputs: dict[TensorName, TensorName] = Field(min_length=1)
    """Model output tensor -> graph tensor it becomes, for later steps and the graph's outputs."""


class Graph(Model):
    name: ShortName
    """Graph name (DNS label): names its Kubernetes objects, and the ensemble model with `placement: ensemble`."""
    namespace: Optional[DnsLabel] = None
    """Namespace (default: the graph's name)."""
    hosts: list[Host] = Field(min_length=1)
    """Hostnames the graph is served on."""
    auth: AuthSettings = AuthSettings()
    """Authentication at the mesh, as for services."""
    placement: Literal["ensemble", "ray"] = "ensemble"
    """`ensemble`: one Triton server runs every step on one GPU share; `ray`: one Ray worker group per step, across nodes."""
    timeout_seconds: Number = Field(default=60, ge=0.001, le=3600)
    """Route timeout of one request through the whole graph."""
    inputs: list[GraphTensor] = Field(min_length=1)
    """Tensors a caller sends."""
    outputs: list[GraphTensor] = Field(min_length=1)
    """Tensors the graph returns (each one a step's output)."""
    steps: list[GraphStep] = Field(min_length=1, max_length=16)
    """The steps in order; each reads graph inputs or earlier steps' outputs."""

    @property
    def k8s_namespace(self) -> str:
        return self.namespace or self.name


def graph_workload(graph: Graph) -> Service:
    """A graph as a service, for what every GPU workload gets (image pre-pull, spare slots,
    cold-start estimates). An ensemble is exactly this service, which its TritonService runs:
    one version running every step. On Ray, a version per step (weight on the first only)
    stands for the step's worker group."""
    steps = graph.steps[:1] if graph.placement == "ensemble" else graph.steps
    versions = [{"name": "v1" if graph.placement == "ensemble" else s.name, "image": s.image,
                 "weight": 100 if i == 0 else 0, "model_repository": s.model_repository.model_dump(),
                 "gpu": s.gpu.model_dump(exclude_none=True), "resources": s.resources.model_dump(exclude_none=True),
                 "replicas": s.replicas.min}
                for i, s in enumerate(steps)]
    first = graph.steps[0]
    service = {"name": graph.name, "namespace": graph.namespace, "hosts": graph.hosts,
               "auth": graph.auth.model_dump(exclude_none=True), "timeout_seconds": graph.timeout_seconds,
               "autoscaling": {"enabled": first.replicas.max > first.replicas.min,
                               "min_replicas": first.replicas.min, "max_replicas": first.replicas.max},
               "versions": versions}
    return Service.model_validate({k: v for k, v in service.items() if v is not None})


class Settings(Model):
    customer: Annotated[str, _checked(grammar.dns_label, 30)]
    """Customer name (DNS label)."""
    environment: Annotated[str, _checked(grammar.dns_label, 20)]
    """Environment name (DNS label), e.g. dev or prod."""
    production: Annotated[bool, BeforeValidator(_top_level_bool)] = False
    """Production stack: stateful resources protected and retained, auth `none` and anonymous Kiali refused."""
    cluster: ClusterSettings
    """The Kubernetes cluster and its node groups."""
    gpu_operator: GpuOperatorSettings = GpuOperatorSettings()
    """NVIDIA GPU operator."""
    cold_start: ColdStartSettings = ColdStartSettings()
    """Fast scale-out: spare GPU capacity and image pre-pull."""
    mesh: MeshSettings = MeshSettings()
    """Istio, Jaeger and Kiali."""
    observability: ObservabilitySettings = ObservabilitySettings()
    """Prometheus, prometheus-adapter, Loki, Alloy and Grafana."""
    ui: UiSettings = UiSettings()
    """Hosts on which Grafana and Kiali reach their users through the ingress gateway (see README: Reaching the UIs)."""
    weight_caches: WeightCacheSettings = WeightCacheSettings()
    """Caches of model weights."""
    services: list[Service] = []
    """Triton inference services."""
    graphs: list[Graph] = []
    """Inference graphs: chains of Triton models (see README: Inference graphs)."""
    tuning_presets: dict[PresetName, BatchingPreset] = {}
    """Batching and instance-group presets by name, beside the built-in `latency` and `throughput` (a name given here replaces the built-in one); weight uploads render them into config variants (README "Tuning a model")."""
    model_pipeline: ModelPipelineSettings = ModelPipelineSettings()
    """Argo Workflows for the model pipeline (README "Tuning a model")."""
    policies: PolicySettings = PolicySettings()
    """Policy pack settings of this stack (`python -m platformctl policy-config` passes them to `pulumi preview --policy-pack`)."""
    kubeconfig: Optional[SecretStr] = None
    """Secret. kubeconfig of an existing cluster (set with `pulumi config set --secret kubeconfig "$(cat kubeconfig)"`)."""
    s3_access_key_id: Optional[SecretStr] = None
    """Secret. Access key of the S3 weight cache."""
    s3_secret_access_key: Optional[SecretStr] = None
    """Secret. Secret key of the S3 weight cache."""
    grafana_oidc_client_secret: Optional[SecretStr] = None
    """Secret. Grafana's OIDC client secret, for `ui.grafana.auth: oidc`."""
    alert_receiver_secrets: dict[Annotated[str, _checked(grammar.dns_label, 40)], SecretStr] = {}
    """Secret. Per alert receiver (`observability.alerting.receivers[].name`), its credential: the webhook URL, Slack webhook URL, SMTP password or PagerDuty routing key (`pulumi config set --secret --path 'alertReceiverSecrets.<name>' ...`)."""

    def node_group(self, name: str) -> NodeGroup:
        return next(g for g in self.cluster.node_groups if g.name == name)

    @property
    def workloads(self) -> list[Service]:
        """Every GPU workload as a service: the services, and each graph's (graph_workload)."""
        return [*self.services, *(graph_workload(g) for g in self.graphs)]

    @property
    def gpu_groups(self) -> list[NodeGroup]:
        return [g for g in self.cluster.node_groups if g.is_gpu]


SECRET_KEYS = ("kubeconfig", "s3AccessKeyId", "s3SecretAccessKey", "grafanaOidcClientSecret", "alertReceiverSecrets")


# --------------------------------------------------------------------------- errors

Path = tuple[Union[str, int], ...]


def format_path(path: Path, namespace: str = NAMESPACE) -> str:
    """`("services", 1, "versions", 0, "weight")` -> `inference-platform:services[1].versions[0].weight`
    (without a namespace, a component argument's path: `service.versions[0].weight`)."""
    text = f"{namespace}:" if namespace else ""
    for i, part in enumerate(path):
        if isinstance(part, int):
            text += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z0-9_/.-]+", str(part)):
            text += ("." if i else "") + str(part)
        else:
            # A key from the stack file with spaces, quotes or newlines: quoted and escaped.
            text += f"[{json.dumps(str(part))}]"
    return text


class ConfigError(Exception):
    """Invalid stack configuration: one or more (key path, problem) pairs."""

    def __init__(self, stack_file: str, problems: list[tuple[Path, str]], namespace: str = NAMESPACE):
        self.stack_file = stack_file
        self.problems = problems
        self.namespace = namespace
        super().__init__(self.one_line())

    def one_line(self) -> str:
        # Messages may echo input; the offline plan promises exactly one line.
        parts = [f"{format_path(p, self.namespace)}: {msg}".replace("\n", "\\n") for p, msg in self.problems]
        return f"{self.stack_file}: invalid configuration: " + "; ".join(parts)

    @property
    def paths(self) -> list[str]:
        return [format_path(p, self.namespace) for p, _ in self.problems]


# Strict type errors, with what the stack file should say instead.
_TYPE_ERRORS = {
    "bool_type": " (write true or false, unquoted)",
    "int_type": " (write a whole number, unquoted)",
    "float_type": " (write a number, unquoted)",
    "string_type": " (write text; quote it if it looks like a number or boolean)",
    "dict_type": "", "list_type": "", "model_type": " (write a mapping of keys)",
    "literal_error": "", "int_from_float": "",
}


def _describe(value: Any) -> str:
    kind = {bool: "the boolean", int: "the integer", float: "the number", str: "the string",
            list: "a list", dict: "a mapping"}.get(type(value), type(value).__name__)
    if isinstance(value, (list, dict)):
        return kind
    text = json.dumps(value) if isinstance(value, str) else repr(value).lower() if isinstance(value, bool) else repr(value)
    return f"{kind} {text[:60]}"


def pydantic_problems(err: ValidationError) -> list[tuple[Path, str]]:
    problems = []
    for e in err.errors(include_url=False):
        loc = tuple(p for p in e["loc"] if not (isinstance(p, str) and ("[" in p or p.startswith("function-"))))
        if e["type"] == "unknown_key":
            loc += (e["ctx"]["key"],)
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] in _TYPE_ERRORS and not (loc and loc[0] in SECRET_KEYS):
            msg = f"{msg}, not {_describe(e['input'])}" + _TYPE_ERRORS[e["type"]]
        if e["type"] == "missing":
            msg = "required key is missing"
        problems.append((loc, msg))
    return problems


# --------------------------------------------------------------------------- cross checks


def loki_bucket_name(bucket: str) -> str:
    """Loki's bucket on the S3 weight cache's endpoint."""
    return f"{bucket}-logs"


def _scale_from_zero_problem(m: MagnumCluster, index: int, group: NodeGroup) -> Optional[str]:
    # What each driver's autoscaler can start from zero nodes, per its source.
    if index == 0:
        return "the first group is the cluster's own worker group and runs the platform; it needs minNodes >= 1"
    if m.node_labeller == "magnum-capi-helm":
        return "magnum-capi-helm refuses minNodes 0 (its Cluster API provider cannot scale to zero); use 1 or more"
    if group.is_gpu:
        # magnum-cluster-api annotates CPU, memory and labels for scale-from-zero, not GPUs; the
        # Magnum provider of our own autoscaler (heat) builds node templates without GPUs.
        return ("the autoscaler cannot know that a new node of this group has GPUs, so it never adds the first one; "
                "use minNodes: 1 and hold spare capacity with coldStart.spareSlots")
    return None


def cluster_problems(c: ClusterSettings) -> list[tuple[Path, str]]:
    problems: list[tuple[Path, str]] = []
    if c.mode == "existing":
        for i, g in enumerate(c.node_groups):
            if not g.selector:
                problems.append((("cluster", "nodeGroups", i, "selector"),
                                 "required in mode existing: the labels that single out this group's nodes "
                                 "(for example a node pool label); the platform's labels, taints and GPU configs go to the nodes it selects"))
        return problems
    m = c.magnum
    for i, g in enumerate(c.node_groups):
        if g.selector != magnum_group_selector(m.node_labeller, i, g.name):
            problems.append((("cluster", "nodeGroups", i, "selector"),
                             f"not in mode magnum: the {m.node_labeller} driver labels the group's nodes itself; remove the key"))
        problem = _scale_from_zero_problem(m, i, g) if g.min_nodes == 0 else None
        if problem:
            problems.append((("cluster", "nodeGroups", i, "minNodes"), problem))
    version = ("cluster", "magnum", "kubernetesVersion")
    rancher = "-rancher" in m.kubernetes_version
    own_registry = {"hyperkube_prefix", "container_infra_prefix"} & set(m.template.labels)
    if m.driver == "heat" and not rancher and not own_registry:
        problems.append((version, f"the heat driver runs the kubelet from docker.io/rancher/hyperkube:<kube_tag>, whose tags end "
                                  f"in -rancher<N>; write {m.kubernetes_version}-rancher1 (or set hyperkube_prefix in template.labels)"))
    if m.driver == "clusterApi" and rancher:
        problems.append((version, "a -rancher tag is for the heat driver; Cluster API drivers take v<major>.<minor>.<patch>"))
    if m.api_allowed_cidrs and m.node_labeller == "magnum-cluster-api":
        problems.append((("cluster", "magnum", "apiAllowedCidrs"), "magnum-cluster-api has no label for an API allow-list; "
                         "remove the key, or use clusterApiDriver magnum-capi-helm or driver heat"))
    if m.driver == "heat" and m.api_floating_ip and not (m.template.master_lb_enabled or m.template.floating_ip_enabled):
        # heat template_def.add_fip_env_file: the API's floating IP sits on the load balancer.
        problems.append((("cluster", "magnum", "template", "masterLbEnabled"),
                         "apiFloatingIp needs the API load balancer on the heat driver; allowed: masterLbEnabled: true, or apiFloatingIp: false"))
    if (m.fixed_network is None) != (m.fixed_subnet is None):
        given, missing = ("fixedNetwork", "fixedSubnet") if m.fixed_subnet is None else ("fixedSubnet", "fixedNetwork")
        problems.append((("cluster", "magnum", missing), f"required with {given}: Magnum puts the nodes on that network's subnet"))
    if m.fixed_subnet is not None and "subnet_cidr" in m.model_fields_set:
        problems.append((("cluster", "magnum", "subnetCidr"), "not with fixedSubnet: the node subnet's CIDR is read from Neutron; remove the key"))
    return problems


_TEMPLATE_OS: Path = ("cluster", "magnum", "template", "os")


def _template_os(s: Settings) -> Optional[str]:
    """The OS of the Magnum template's image; None in mode existing, and for a templateId
    whose image template.os does not describe."""
    m = s.cluster.magnum
    if s.cluster.mode != "magnum" or (m.template_id is not None and "os" not in m.template.model_fields_set):
        return None
    return m.template.os


def _node_os(s: Settings, index: int, group: NodeGroup) -> tuple[Optional[str], Path]:
    """The OS a group's nodes run and the key that says so (None where no key does)."""
    own: Path = ("cluster", "nodeGroups", index, "os")
    if group.os is not None or group.image is not None or _template_os(s) is None:
        return group.os, own
    return _template_os(s), _TEMPLATE_OS


def _node_os_problems(s: Settings) -> list[tuple[Path, str]]:
    """Each node OS against what the Magnum driver boots and, on GPU groups, against the
    driver mode of the GPU operator (the rules are data in driver_support)."""
    problems: dict[Path, str] = {}  # groups that share the template's OS share one problem
    template_os = _template_os(s)
    labeller = s.cluster.magnum.node_labeller
    if template_os is not None:
        problem = driver_support.magnum_boot_problem(labeller, template_os)
        if problem:
            problems[_TEMPLATE_OS] = problem
    driver = s.gpu_operator.driver
    managed = s.gpu_operator.enabled and driver.mode != "preinstalled"
    for i, g in enumerate(s.cluster.node_groups):
        os_id, path = _node_os(s, i, g)
        if s.cluster.mode == "magnum" and g.os is not None:
            problem = driver_support.magnum_boot_problem(labeller, g.os) or (
                template_os and driver_support.magnum_group_problem(labeller, template_os, g.os, default_group=i == 0))
            if problem:
                problems.setdefault(path, problem)
                continue
        if not (g.is_gpu and managed) or path in problems:
            continue
        if os_id is None:
            why = ("mode existing" if s.cluster.mode == "existing" else "it sets its own image" if g.image
                   else "templateId is set without template.os")
            problems[path] = (f"required on GPU group {g.name!r} ({why}) while the GPU operator installs drivers "
                              f"(driver mode {driver.mode}): the OS of its nodes; allowed with {driver.mode}: "
                              f"{', '.join(driver_support.mode_oses(driver.mode))}")
            continue
        found = driver_support.driver_mode_problem(os_id, driver.mode, driver.branch)
        if found:
            key, message = found
            where = path if key == "os" else ("gpuOperator", "driver", "branch")
            problems.setdefault(where, f"GPU group {g.name!r} runs {os_id} with driver mode {driver.mode}: {message}")
    return list(problems.items())


def _ui_problems(s: Settings) -> list[tuple[Path, str]]:
    """UI hosts: served by the platform's gateway, with TLS (or plain HTTP opted into outside
    production), on hosts no service uses; the OIDC client secret where Grafana needs it."""
    problems: list[tuple[Path, str]] = []
    ui = s.ui
    oidc = ui.grafana is not None and ui.grafana.auth == "oidc"
    if oidc and s.grafana_oidc_client_secret is None:
        problems.append((("grafanaOidcClientSecret",), f"ui.grafana.auth 'oidc' needs the secret {NAMESPACE}:grafanaOidcClientSecret "
                         "(pulumi config set --secret grafanaOidcClientSecret ...)"))
    if not oidc and s.grafana_oidc_client_secret is not None:
        problems.append((("grafanaOidcClientSecret",), "applies to ui.grafana.auth 'oidc' only; remove the key"))
    if s.production and ui.allow_plain_http:
        problems.append((("ui", "allowPlainHttp"), "plain HTTP UIs are not allowed in a production stack; allowed: false (set mesh.tls)"))
    service_hosts = {h: si for si, svc in enumerate(s.services) for h in svc.hosts}
    seen: dict[str, str] = {}
    for name, host in ui.hosts.items():
        path: Path = ("ui", name, "host")
        if not s.mesh.enabled:
            problems.append((path, "a UI host needs the platform's ingress gateway; allowed with mesh.enabled: true only"))
        elif name == "grafana" and not s.observability.enabled:
            problems.append((path, "Grafana is not installed (observability.enabled: false); remove ui.grafana"))
        elif not s.mesh.tls.enabled and (s.production or not ui.allow_plain_http):
            problems.append((path, "a UI login needs HTTPS: set mesh.tls.enabled and mesh.tls.secretName"
                             + ("" if s.production else ", or ui.allowPlainHttp: true (non-production stacks only)")))
        if host in service_hosts:
            problems.append((path, f"host {host!r} is already served by services[{service_hosts[host]}]"))
        elif host in seen:
            problems.append((path, f"host {host!r} is already ui.{seen[host]}.host"))
        seen.setdefault(host, name)
    return problems


ANONYMOUS_KIALI = "anonymous Kiali is not allowed in a production stack; allowed: token, openid"


MANILA_NEEDS_CIDRS = ("weightCaches.fileShare (manila) needs accessCidrs: the cluster is not created by this stack, "
                      "so its subnet is unknown")


def needs_access_cidrs(caches: WeightCacheSettings, subnet_cidr: Any) -> bool:
    """A Manila share's access rules need CIDRs: none configured and the node subnet unknown."""
    share = caches.file_share
    return share is not None and share.mode == "manila" and not share.access_cidrs and subnet_cidr is None


def cross_checks(s: Settings) -> list[tuple[Path, str]]:
    """What one part of the settings says about another; plain function, testable alone."""
    problems: list[tuple[Path, str]] = []
    groups = {g.name: g for g in s.cluster.node_groups}
    gpu_names = sorted(g.name for g in s.gpu_groups)

    seen: set[str] = set()
    for i, g in enumerate(s.cluster.node_groups):
        if g.name in seen:
            problems.append((("cluster", "nodeGroups", i, "name"), f"duplicate node group name {g.name!r}; names must be unique"))
        seen.add(g.name)
        if s.cluster.mode == "magnum" and i > 0 and g.name in MAGNUM_RESERVED_ROLES:
            problems.append((("cluster", "nodeGroups", i, "name"),
                             f"{g.name!r} is a role Magnum gives its own node groups; the platform's autoscaler "
                             f"discovers extra groups by role, so choose another name (not {', '.join(sorted(MAGNUM_RESERVED_ROLES))})"))
        if s.cluster.mode == "magnum" and i > 0 and g.flavor is None:
            problems.append((("cluster", "nodeGroups", i, "flavor"),
                             f"Magnum node group {g.name!r} needs a flavor (only the first group defaults to the template's)"))

    problems += cluster_problems(s.cluster)
    problems += _node_os_problems(s)

    for group, _ in s.cold_start.spare_slots.items():
        if group not in groups or not groups[group].is_gpu:
            problems.append((("coldStart", "spareSlots", group), f"no GPU node group named {group!r}; GPU groups: {', '.join(gpu_names) or 'none'}"))

    if s.cluster.gpu_quota is not None:
        total = sum(g.max_nodes * g.gpu.per_node for g in s.gpu_groups)
        if total > s.cluster.gpu_quota:
            problems.append((("cluster", "gpuQuota"), f"GPU node groups can grow to {total} GPUs, over the quota of {s.cluster.gpu_quota}; lower maxNodes or raise gpuQuota"))

    if s.production and s.mesh.kiali_auth == "anonymous":
        problems.append((("mesh", "kialiAuth"), ANONYMOUS_KIALI))
    if s.observability.loki_storage == "s3" and s.weight_caches.s3 is None:
        problems.append((("observability", "lokiStorage"), "lokiStorage 's3' needs weightCaches.s3 (its endpoint and credentials)"))
    if s.observability.loki_storage == "s3" and s.weight_caches.s3 is not None:
        logs_bucket = loki_bucket_name(s.weight_caches.s3.bucket)
        try:
            grammar.bucket_name(logs_bucket)
        except ValueError as err:
            problems.append((("weightCaches", "s3", "bucket"), f"Loki's bucket derived from it: {err}"))
    if s.cluster.mode == "existing" and needs_access_cidrs(s.weight_caches, None):
        problems.append((("weightCaches", "fileShare", "accessCidrs"), MANILA_NEEDS_CIDRS))
    if s.weight_caches.s3 is not None and s.weight_caches.s3.adopt and s.weight_caches.s3.force_destroy:
        problems.append((("weightCaches", "s3", "forceDestroy"), "forceDestroy: true is not allowed with adopt: true "
                         "(an adopted bucket held data before this stack and is never emptied); allowed: forceDestroy: false"))
    if s.weight_caches.s3 is not None:
        for key, value in (("s3AccessKeyId", s.s3_access_key_id), ("s3SecretAccessKey", s.s3_secret_access_key)):
            if value is None:
                problems.append(((key,), f"weightCaches.s3 needs the secret {NAMESPACE}:{key} (pulumi config set --secret {key} ...)"))

    problems += _ui_problems(s)
    problems += alerting_problems(s)
    problems += tuning_problems(s)

    names: dict[str, str] = {}
    hosts: dict[str, str] = {}
    caches = {"fileShare": s.weight_caches.file_share, "s3": s.weight_caches.s3}
    configured = ", ".join(k for k, c in caches.items() if c) or "none"
    served = [("services", i, svc) for i, svc in enumerate(s.services)] + [("graphs", i, g) for i, g in enumerate(s.graphs)]
    for kind, i, item in served:
        base: Path = (kind, i)
        where = f"{kind}[{i}]"
        if item.name in names:
            problems.append((base + ("name",), f"name {item.name!r} is already used by {names[item.name]}; "
                             "service and graph names must be unique"))
        names.setdefault(item.name, where)
        for hi, host in enumerate(item.hosts):
            if host in hosts and hosts[host] != where:
                problems.append((base + ("hosts", hi), f"host {host!r} is already served by {hosts[host]}"))
            hosts.setdefault(host, where)
        if item.k8s_namespace in PLATFORM_NAMESPACES or item.k8s_namespace == "default" or item.k8s_namespace.startswith("kube-"):
            key = "namespace" if item.namespace else "name"
            problems.append((base + (key,), f"namespace {item.k8s_namespace!r} is reserved; not allowed: default, kube-*, "
                             f"{', '.join(sorted(PLATFORM_NAMESPACES - {'kube-system'}))}"
                             + ("" if item.namespace else " (set namespace to place it elsewhere)")))
        if item.auth.mode == "none" and s.production:
            problems.append((base + ("auth", "mode"), "auth mode 'none' is not allowed in a production stack; allowed: basic, jwt"))
        if kind == "services":
            problems += [(base + path, problem) for path, problem in service_problems(item, groups)]
            repositories = [(("versions", vi), v.model_repository) for vi, v in enumerate(item.versions)]
        else:
            problems += [(base + path, problem) for path, problem in graph_problems(item, groups)]
            repositories = [(("steps", si), step.model_repository) for si, step in enumerate(item.steps)]
        for path, repo in repositories:
            if caches[repo.cache] is None:
                problems.append((base + path + ("modelRepository", "cache"),
                                 f"weight cache {repo.cache!r} is not configured under weightCaches; configured: {configured}"))
    return problems


def gpu_request_problems(gpu: GpuRequest, groups: Mapping[str, NodeGroup]) -> list[tuple[Path, str]]:
    """A GPU request against the node groups (paths relative to the request): its group is a
    GPU group, and it names a MIG slice exactly when the group's MIG strategy is mixed."""
    group = groups.get(gpu.group)
    if group is None or not group.is_gpu:
        gpu_names = sorted(name for name, g in groups.items() if g.is_gpu)
        return [(("gpu", "group"), f"no GPU node group named {gpu.group!r}; GPU groups: {', '.join(gpu_names) or 'none'}")]
    mixed = group.gpu.sharing.mode == "mig" and group.gpu.sharing.effective_mig_strategy == "mixed"
    if gpu.mig_profile is not None and not mixed:
        return [(("gpu", "migProfile"), f"migProfile applies to groups with MIG strategy 'mixed'; group {group.name!r} is not one")]
    if mixed and gpu.mig_profile is None:
        return [(("gpu", "migProfile"), f"group {group.name!r} uses MIG strategy 'mixed': say which slice with migProfile")]
    return []


# What every step of an ensemble shares: one Triton server runs them all.
ENSEMBLE_SHARED = ("image", "model_repository", "gpu", "replicas", "resources")


def graph_problems(g: Graph, groups: Mapping[str, NodeGroup]) -> list[tuple[Path, str]]:
    """What one graph's own settings contradict (paths relative to the graph): step names,
    the flow of tensors from the graph's inputs through the steps to its outputs, GPU
    requests, and with `placement: ensemble` the settings every step must share."""
    problems: list[tuple[Path, str]] = list(_step_name_problems(g))
    available: dict[str, str] = {}
    for ti, t in enumerate(g.inputs):
        if t.name in available:
            problems.append((("inputs", ti, "name"), f"duplicate graph input {t.name!r}"))
        available[t.name] = "a graph input"
    for si, step in enumerate(g.steps):
        base: Path = ("steps", si)
        for model_input, tensor in step.inputs.items():
            if tensor not in available:
                problems.append((base + ("inputs", model_input), f"graph tensor {tensor!r} is neither a graph input nor an "
                                 f"earlier step's output; available here: {', '.join(sorted(available))}"))
        for model_output, tensor in step.outputs.items():
            if tensor in available:
                problems.append((base + ("outputs", model_output), f"graph tensor {tensor!r} is already {available[tensor]}; "
                                 "every graph tensor has one source"))
            available.setdefault(tensor, f"an output of step {step.name!r}")
        problems += [(base + path, problem) for path, problem in gpu_request_problems(step.gpu, groups)]
    produced = {t for step in g.steps for t in step.outputs.values()}
    for oi, t in enumerate(g.outputs):
        if t.name not in produced:
            problems.append((("outputs", oi, "name"), f"no step outputs graph tensor {t.name!r}; step outputs: "
                             f"{', '.join(sorted(produced))}"))
    if g.placement == "ensemble":
        first = g.steps[0]
        for si, step in enumerate(g.steps[1:], start=1):
            for key in ENSEMBLE_SHARED:
                if getattr(step, key) != getattr(first, key):
                    problems.append((("steps", si, to_camel(key)), f"placement 'ensemble' runs every step in one Triton "
                                     f"server: {to_camel(key)} must equal steps[0]'s; allowed: the same value, or placement 'ray'"))
        if g.name in {step.model for step in g.steps}:
            problems.append((("name",), f"the ensemble model is named after the graph, and a step's model is named "
                             f"{g.name!r} too; rename the graph"))
    return problems


def _step_name_problems(g: Graph) -> Iterable[tuple[Path, str]]:
    seen: set[str] = set()
    for si, step in enumerate(g.steps):
        if step.name in seen:
            yield ("steps", si, "name"), f"duplicate step name {step.name!r} in graph {g.name!r}"
        seen.add(step.name)


def service_problems(svc: Service, groups: Mapping[str, NodeGroup]) -> list[tuple[Path, str]]:
    """What one service's own settings contradict, against the node groups its versions name
    (paths relative to the service): timings, weights, version names, GPU groups and MIG
    profiles, the mirror's version. The stack file's cross checks and a TritonService used
    alone both run it."""
    problems: list[tuple[Path, str]] = list(svc.timing_problems())
    total = sum(v.weight for v in svc.versions)
    if total != 100:
        weights = " + ".join(str(v.weight) for v in svc.versions)
        problems.append((("versions",), f"version weights sum to {total} ({weights}); they must sum to 100"))
    version_names: set[str] = set()
    for vi, v in enumerate(svc.versions):
        vpath: Path = ("versions", vi)
        if v.name in version_names:
            problems.append((vpath + ("name",), f"duplicate version name {v.name!r} in service {svc.name!r}"))
        version_names.add(v.name)
        problems += [(vpath + path, problem) for path, problem in gpu_request_problems(v.gpu, groups)]
        if v.tuning is not None and v.tuning.sdk_image is None and not TRITON_IMAGE.match(v.image):
            problems.append((vpath + ("tuning", "sdkImage"), f"required: image {v.image!r} is not tagged "
                             "<registry>/tritonserver:<YY.MM>-<flavour>, so the Triton SDK image of its release is unknown; "
                             "allowed: a Model Analyzer image of the same Triton release"))
    if svc.mirror is not None and svc.mirror.version not in version_names:
        problems.append((("mirror", "version"), f"no version named {svc.mirror.version!r}; versions: {', '.join(sorted(version_names))}"))
    return problems


def alerting_problems(s: Settings) -> list[tuple[Path, str]]:
    """Receiver names unique, every routed name a receiver, every receiver with its secret and no other secrets."""
    problems: list[tuple[Path, str]] = []
    base: Path = ("observability", "alerting")
    a = s.observability.alerting
    seen: set[str] = set()
    for i, r in enumerate(a.receivers):
        if r.name in seen:
            problems.append((base + ("receivers", i, "name"), f"duplicate receiver name {r.name!r}"))
        seen.add(r.name)
        if r.name == "null":
            problems.append((base + ("receivers", i, "name"), "'null' is Alertmanager's receiver that drops alerts; pick another name"))
        if r.name not in s.alert_receiver_secrets:
            problems.append((base + ("receivers", i), f"receiver {r.name!r} needs its {r.kind} credential in the secret "
                             f"{NAMESPACE}:alertReceiverSecrets.{r.name} (pulumi config set --secret --path 'alertReceiverSecrets.{r.name}' ...)"))
    for severity in ("critical", "warning"):
        for i, name in enumerate(getattr(a, severity)):
            if name not in seen:
                problems.append((base + (severity, i), f"no receiver named {name!r}; receivers: {', '.join(sorted(seen)) or 'none'}"))
    for name in sorted(set(s.alert_receiver_secrets) - seen):
        problems.append((("alertReceiverSecrets", name), f"no receiver named {name!r} under observability.alerting.receivers; "
                         f"receivers: {', '.join(sorted(seen)) or 'none'}"))
    return problems


def unknown_preset_problems(s3: S3Cache, tuning_presets: Mapping[str, BatchingPreset]) -> list[tuple[Path, str]]:
    """Upload presets that are neither built in nor in `tuning_presets` (paths below weightCaches)."""
    presets = sorted({*BUILTIN_PRESETS, *tuning_presets})
    return [(("s3", "uploads", ui, "presets", pi), f"no tuning preset named {preset!r}; presets: {', '.join(presets)}")
            for ui, upload in enumerate(s3.uploads) for pi, preset in enumerate(upload.presets) if preset not in presets]


def tuning_problems(s: Settings) -> list[tuple[Path, str]]:
    """Presets the uploads name exist; a service pipeline has Argo installed and a base version."""
    problems: list[tuple[Path, str]] = []
    if s.weight_caches.s3 is not None:
        problems += [(("weightCaches", *path), why) for path, why in unknown_preset_problems(s.weight_caches.s3, s.tuning_presets)]
    for si, svc in enumerate(s.services):
        if svc.pipeline is None:
            continue
        if not s.model_pipeline.enabled:
            problems.append((("services", si, "pipeline"), "needs modelPipeline.enabled: true (Argo Workflows runs the pipeline)"))
        problems += [(("services", si, *path), why) for path, why in pipeline_problems(svc)]
    return problems


def pipeline_problems(svc: Service) -> list[tuple[Path, str]]:
    """A service's pipeline builds for a version it has, whose image names the TensorRT release
    (key paths within the service)."""
    names = [v.name for v in svc.versions]
    base = next((v for v in svc.versions if v.name == svc.pipeline.base_version), None)
    if base is None:
        return [(("pipeline", "baseVersion"), f"no version named {svc.pipeline.base_version!r}; versions: {', '.join(names)}")]
    if not TRITON_IMAGE.match(base.image):
        # A TensorRT engine runs only under the TensorRT release that built it (tuning.tensorrt_image).
        return [(("pipeline", "baseVersion"), f"version {base.name!r} runs {base.image!r}, not an image tagged "
                 "<registry>/tritonserver:<YY.MM>-<flavour>, so the TensorRT release its engine needs is unknown; "
                 "allowed: a base version running such an image")]
    return []
