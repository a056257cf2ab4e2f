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
import re
from typing import Any, Literal, Optional, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

NAMESPACE = "inference-platform"

DNS_LABEL = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"
# A Kubernetes quantity such as 500m, 4, 16Gi, 1.5.
QUANTITY = r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$"
HOSTNAME = r"^(\*\.)?([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)+[a-z]{2,}$"
LABEL_KEY = r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
LABEL_VALUE = r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$"

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
    )

    @model_validator(mode="before")
    @classmethod
    def _refuse_unknown_keys(cls, data: Any) -> Any:
        # pydantic's own message for extra keys names no alternatives; this one does.
        if isinstance(data, dict):
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


# --------------------------------------------------------------------------- cluster


class Taint(Model):
    key: str = Field(pattern=LABEL_KEY)
    """Taint key."""
    value: str = Field(default="", pattern=LABEL_VALUE)
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
    name: str = Field(pattern=DNS_LABEL, max_length=40)
    """Group name (DNS label); services place versions on GPU groups by this name."""
    flavor: Optional[str] = None
    """OpenStack flavor of the group's nodes (Magnum clusters: required)."""
    image: Optional[str] = None
    """Magnum only: Glance image of the group's nodes (default: the cluster template's image)."""
    min_nodes: int = Field(default=1, ge=0, le=1000)
    """Fewest nodes the cluster autoscaler keeps."""
    max_nodes: int = Field(default=1, ge=1, le=1000)
    """Most nodes the cluster autoscaler may create."""
    initial_nodes: Optional[int] = Field(default=None, ge=0, le=1000)
    """Nodes at creation (default: minNodes)."""
    labels: dict[str, str] = {}
    """Extra Kubernetes node labels."""
    taints: list[Taint] = []
    """Extra Kubernetes node taints (GPU groups get `nvidia.com/gpu=present:NoSchedule` in addition)."""
    gpu: Optional[GpuSpec] = None
    """GPUs of the group's nodes; absent for a CPU group."""

    @field_validator("labels")
    @classmethod
    def _valid_labels(cls, labels: dict[str, str]) -> dict[str, str]:
        for k, v in labels.items():
            if not re.match(LABEL_KEY, k):
                raise ValueError(f"label key {k!r} is not a valid Kubernetes label key")
            if not re.match(LABEL_VALUE, v):
                raise ValueError(f"label value {v!r} of {k!r} is not a valid Kubernetes label value (63 characters of [A-Za-z0-9-_.])")
        return labels

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
    def start_nodes(self) -> int:
        return self.min_nodes if self.initial_nodes is None else self.initial_nodes


class ExistingCluster(Model):
    context: Optional[str] = None
    """kubeconfig context to use. The kubeconfig itself comes from the secret key `inference-platform:kubeconfig`, or else the ambient one (KUBECONFIG or ~/.kube/config)."""


class MagnumTemplate(Model):
    image: str = "fedora-coreos-40"
    """Glance image of the cluster's nodes."""
    external_network_id: str = "public"
    """External network for floating IPs and load balancers."""
    master_flavor: str = "m1.large"
    """Flavor of control-plane nodes."""
    flavor: str = "m1.large"
    """Default flavor of worker nodes."""
    docker_volume_size: int = Field(default=100, ge=10, le=2000)
    """Container storage volume per node, GB (Triton images are large)."""
    network_driver: Literal["calico", "flannel", "cilium"] = "calico"
    """Kubernetes network driver (calico supports NetworkPolicy)."""
    dns_nameserver: str = "8.8.8.8"
    """DNS nameserver of the cluster network."""
    master_lb_enabled: bool = True
    """Put a load balancer in front of the API servers."""
    floating_ip_enabled: bool = False
    """Give every node a floating IP."""
    labels: dict[str, str] = {}
    """Extra Magnum labels, merged over the platform's own (autoscaling and version labels)."""


class MagnumCluster(Model):
    template_id: Optional[str] = None
    """Use this existing ClusterTemplate instead of creating one from `template`."""
    template: MagnumTemplate = MagnumTemplate()
    """ClusterTemplate to create when templateId is not set."""
    kubernetes_version: str = Field(default="v1.34.1", pattern=r"^v1\.[0-9]+\.[0-9]+$")
    """Kubernetes version label (kube_tag) of the cluster."""
    master_count: int = Field(default=1, ge=1, le=7)
    """Control-plane nodes (1, 3 or 5 in practice; 3 for production)."""
    keypair: Optional[str] = None
    """Nova keypair for node access."""
    fixed_network: Optional[str] = None
    """Existing network for the cluster (default: Magnum creates one)."""
    fixed_subnet: Optional[str] = None
    """Existing subnet for the cluster."""
    subnet_cidr: str = "10.0.0.0/24"
    """CIDR of the cluster's node subnet, allowed to mount the file share."""

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


# --------------------------------------------------------------------------- GPU operator and cold start


class DriverSettings(Model):
    mode: Literal["precompiled", "compiled", "preinstalled"] = "precompiled"
    """`precompiled`: driver images built for the node kernel (fastest node start); `compiled`: built on each node; `preinstalled`: the node image has the driver."""
    branch: str = Field(default="595", pattern=r"^[0-9]{3}$")
    """Driver branch (precompiled) or the major of the driver version (compiled)."""


class GpuOperatorSettings(Model):
    enabled: bool = True
    """Install the NVIDIA GPU operator."""
    driver: DriverSettings = DriverSettings()
    """NVIDIA driver installation."""
    dcgm_exporter: bool = True
    """Run the DCGM exporter (GPU metrics) with its ServiceMonitor."""


class StageSeconds(Model):
    node_boot: int = Field(default=120, ge=0)
    """Seconds for a new VM to boot and join the cluster."""
    driver_install: int = Field(default=180, ge=0)
    """Seconds for the GPU operator to prepare a node (precompiled drivers)."""
    driver_compile: int = Field(default=300, ge=0)
    """Extra seconds to build the driver's kernel module on the node (driver mode `compiled`)."""
    image_pull: int = Field(default=360, ge=0)
    """Seconds to pull and extract a Triton image (about 360 for 20 GB gzip layers, 150 with zstd)."""
    weight_fetch: int = Field(default=210, ge=0)
    """Seconds to fetch weights when they are not read from a cache."""
    model_load: int = Field(default=420, ge=0)
    """Seconds for Triton to load the model."""


class ColdStartSettings(Model):
    image_pre_pull: bool = True
    """Pre-pull every Triton image on the GPU groups it runs on, overlapping pulls with driver installation."""
    spare_slots: dict[str, int] = {}
    """Per GPU group, GPU slots held free by low-priority placeholder pods so a new replica starts at once."""
    stage_seconds: StageSeconds = StageSeconds()
    """Stage durations used for the plan's cold-start estimate."""

    @field_validator("spare_slots")
    @classmethod
    def _non_negative(cls, v: dict[str, int]) -> dict[str, int]:
        for group, slots in v.items():
            if slots < 0 or slots > 64:
                raise ValueError(f"spareSlots of {group!r} is {slots}; allowed: 0-64")
        return v


# --------------------------------------------------------------------------- mesh and observability


class GatewayTls(Model):
    enabled: bool = False
    """Serve HTTPS on the ingress gateway."""
    secret_name: Optional[str] = Field(default=None, pattern=DNS_LABEL)
    """Kubernetes TLS Secret (in istio-system) holding the certificate; required when enabled."""

    @model_validator(mode="after")
    def _secret_when_enabled(self) -> "GatewayTls":
        if self.enabled and not self.secret_name:
            raise ValueError("tls.enabled needs secretName (a kubernetes.io/tls Secret in istio-system)")
        return self


class KialiOpenId(Model):
    issuer_uri: str = Field(pattern=r"^https://")
    """The identity provider's issuer URL (Kiali reads its discovery document)."""
    client_id: str = Field(min_length=1)
    """Kiali's client id at the identity provider. The client secret goes into the Secret `kiali` (key `oidc-secret`) in istio-system, created by the identity-provider owner."""
    username_claim: str = "sub"
    """Token claim shown as the user name."""


class MeshSettings(Model):
    enabled: bool = True
    """Install Istio (base, istiod, ingress gateway)."""
    gateway_annotations: dict[str, str] = {}
    """Annotations of the ingress gateway's LoadBalancer Service (e.g. Octavia settings)."""
    tls: GatewayTls = GatewayTls()
    """TLS of the customer Gateway."""
    tracing_sampling_percent: float = Field(default=1.0, ge=0.0, le=100.0)
    """Percent of requests traced to Jaeger."""
    jaeger_storage: Literal["memory", "persistent"] = "memory"
    """Jaeger trace storage."""
    jaeger_storage_size: str = Field(default="10Gi", pattern=QUANTITY)
    """Volume size for persistent Jaeger storage."""
    kiali_auth: Literal["token", "openid", "anonymous"] = "token"
    """Kiali login strategy; `anonymous` is refused in production stacks."""
    kiali_openid: Optional[KialiOpenId] = None
    """Identity provider of Kiali's `openid` strategy (required with it)."""

    @model_validator(mode="after")
    def _openid_settings(self) -> "MeshSettings":
        if self.kiali_auth == "openid" and self.kiali_openid is None:
            raise ValueError("kialiAuth 'openid' needs kialiOpenid.issuerUri and kialiOpenid.clientId")
        if self.kiali_auth != "openid" and self.kiali_openid is not None:
            raise ValueError(f"kialiOpenid applies to kialiAuth 'openid' only, kialiAuth is '{self.kiali_auth}'")
        return self


class AlertThresholds(Model):
    queue_time_ms: float = Field(default=100.0, gt=0)
    """Average Triton queue time above which the queue-time alert fires, milliseconds."""
    failure_ratio: float = Field(default=0.05, gt=0, lt=1)
    """Share of failed inference requests above which the failure alert fires."""
    gpu_memory_ratio: float = Field(default=0.95, gt=0, le=1)
    """GPU framebuffer use above which the GPU memory alert fires."""


class ObservabilitySettings(Model):
    enabled: bool = True
    """Install kube-prometheus-stack, prometheus-adapter, Loki, Alloy and Grafana."""
    prometheus_retention: str = Field(default="15d", pattern=r"^[0-9]+(h|d|w|y)$")
    """How long Prometheus keeps samples."""
    prometheus_storage_size: str = Field(default="50Gi", pattern=QUANTITY)
    """Prometheus volume size."""
    storage_class: Optional[str] = None
    """StorageClass of observability volumes (default: the cluster default)."""
    loki_storage: Literal["filesystem", "s3"] = "filesystem"
    """Loki chunk storage: a volume, or the S3 weight cache's endpoint."""
    loki_storage_size: str = Field(default="20Gi", pattern=QUANTITY)
    """Loki volume size (filesystem storage)."""
    loki_retention: str = Field(default="168h", pattern=r"^[0-9]+(h|d|w)$")
    """How long Loki keeps logs."""
    alerts: AlertThresholds = AlertThresholds()
    """Alert thresholds."""


# --------------------------------------------------------------------------- weight caches


class FileShareCache(Model):
    mode: Literal["manila", "existing"] = "manila"
    """`manila`: create an OpenStack Manila NFS share; `existing`: mount an NFS export that exists."""
    size_gb: int = Field(default=500, ge=1, le=100000)
    """Share size, GB (manila)."""
    share_type: Optional[str] = None
    """Manila share type (default: the cloud's default)."""
    share_network_id: Optional[str] = None
    """Manila share network (needed by drivers that manage share servers)."""
    access_cidrs: list[str] = []
    """Client CIDRs allowed to mount the share (default: the cluster's subnet)."""
    server: Optional[str] = None
    """NFS server (existing)."""
    path: Optional[str] = None
    """NFS export path (existing)."""
    storage_size: str = Field(default="500Gi", pattern=QUANTITY)
    """Capacity of the PersistentVolumes that expose the share."""

    @field_validator("access_cidrs")
    @classmethod
    def _cidrs(cls, v: list[str]) -> list[str]:
        import ipaddress

        for cidr in v:
            try:
                ipaddress.ip_network(cidr)
            except ValueError:
                raise ValueError(f"{cidr!r} is not a CIDR such as 10.0.0.0/24") from None
        return v

    @model_validator(mode="after")
    def _existing_needs_export(self) -> "FileShareCache":
        if self.mode == "existing" and not (self.server and self.path):
            raise ValueError("mode 'existing' needs server and path of the NFS export")
        if self.mode == "manila" and (self.server or self.path):
            raise ValueError("server and path apply to mode 'existing' only; manila takes them from the share")
        return self


class WeightUpload(Model):
    source: str
    """Local model-repository directory (relative to the project) to upload."""
    prefix: str = Field(pattern=r"^[A-Za-z0-9][-A-Za-z0-9_./]*$")
    """Key prefix in the bucket."""


class S3Mount(Model):
    enabled: bool = False
    """Install the csi-s3 driver (GeeseFS) and expose the bucket as the claim `model-weights-s3-mount` in each namespace that reads from S3, for readers that want a POSIX path (mount it readOnly; Triton keeps its `s3://` URL)."""
    prefix: str = Field(default="", pattern=r"^([A-Za-z0-9][-A-Za-z0-9_.]*(/[A-Za-z0-9][-A-Za-z0-9_.]*)*)?$")
    """Key prefix to mount instead of the whole bucket, e.g. `models`."""
    mount_options: str = Field(default="--memory-limit 1000 --dir-mode 0555 --file-mode 0444", pattern=r"^[-A-Za-z0-9_.,= ]*$")
    """GeeseFS options of the mount (`--memory-limit` is MB of node memory per mounted volume)."""
    storage_size: str = Field(default="1Ti", pattern=QUANTITY)
    """Nominal capacity of the PersistentVolumes (S3 has no size; binding needs one)."""


class S3Cache(Model):
    endpoint: str = Field(pattern=r"^https?://[^/\s]+$")
    """S3-compatible endpoint URL, e.g. https://s3.example.cloud (credentials: secret keys `inference-platform:s3AccessKeyId` and `s3SecretAccessKey`)."""
    region: str = "us-east-1"
    """Region name the endpoint expects."""
    bucket: str = Field(pattern=r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
    """Bucket name."""
    versioning: bool = True
    """Keep object versions."""
    noncurrent_days: int = Field(default=30, ge=1, le=3650)
    """Days after which old object versions expire."""
    force_destroy: bool = False
    """Allow deleting a non-empty bucket."""
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
    issuer: str
    """Token issuer (`iss`)."""
    jwks_uri: str = Field(pattern=r"^https://")
    """URL of the issuer's JSON Web Key Set."""
    audiences: list[str] = []
    """Accepted audiences (`aud`); empty accepts any."""


class AuthSettings(Model):
    mode: Literal["basic", "jwt", "none"] = "basic"
    """`basic`: generated credentials checked at the mesh; `jwt`: tokens from an identity provider; `none`: open (non-production stacks only)."""
    realm: Optional[str] = None
    """Basic Auth realm (default: the service name)."""
    jwt: Optional[JwtAuth] = None
    """Identity provider, for mode `jwt`."""

    @model_validator(mode="after")
    def _jwt_needs_issuer(self) -> "AuthSettings":
        if self.mode == "jwt" and self.jwt is None:
            raise ValueError("mode 'jwt' needs jwt.issuer and jwt.jwksUri")
        if self.mode != "jwt" and self.jwt is not None:
            raise ValueError(f"jwt settings apply to mode 'jwt' only, mode is '{self.mode}'")
        return self


class Autoscaling(Model):
    enabled: bool = True
    """Scale each version with an HPA on Triton's average queue time."""
    min_replicas: int = Field(default=1, ge=1, le=1000)
    """Fewest replicas per version."""
    max_replicas: int = Field(default=3, ge=1, le=1000)
    """Most replicas per version."""
    queue_time_target_us: int = Field(default=50000, ge=100)
    """Target per-pod average queue time, microseconds."""
    scale_down_stabilization_seconds: int = Field(default=300, ge=0, le=3600)
    """How long load must stay low before replicas are removed."""

    @model_validator(mode="after")
    def _ordered(self) -> "Autoscaling":
        if self.min_replicas > self.max_replicas:
            raise ValueError(f"minReplicas ({self.min_replicas}) exceeds maxReplicas ({self.max_replicas})")
        return self


class Retries(Model):
    attempts: int = Field(default=2, ge=0, le=10)
    """Retries per request (0 disables)."""
    per_try_timeout_seconds: float = Field(default=30, gt=0)
    """Timeout of each try."""
    retry_on: str = "connect-failure,refused-stream,unavailable,reset,503"
    """Envoy retry conditions."""


class Mirror(Model):
    version: str
    """Version that receives a copy of live traffic (its responses are discarded)."""
    percent: float = Field(default=100.0, gt=0, le=100)
    """Share of requests copied."""


class ModelRepository(Model):
    cache: Literal["fileShare", "s3"]
    """Weight cache holding the model repository."""
    path: str = Field(pattern=r"^[A-Za-z0-9][-A-Za-z0-9_./]*$")
    """Path inside the file share, or key prefix inside the bucket."""


class GpuRequest(Model):
    group: str
    """GPU node group the version runs on."""
    count: int = Field(default=1, ge=1, le=16)
    """GPUs (or GPU slices / shares) per replica."""
    mig_profile: Optional[str] = Field(default=None, pattern=r"^[0-9]g\.[0-9]+gb(\+me)?$")
    """MIG profile of the slice, for groups with MIG strategy `mixed` (e.g. `1g.10gb`)."""


class Resources(Model):
    cpu: str = Field(default="4", pattern=QUANTITY)
    """CPU request per replica."""
    memory: str = Field(default="16Gi", pattern=QUANTITY)
    """Memory request per replica."""
    cpu_limit: Optional[str] = Field(default=None, pattern=QUANTITY)
    """CPU limit (default: no CPU limit, avoiding throttling)."""
    memory_limit: Optional[str] = Field(default=None, pattern=QUANTITY)
    """Memory limit (default: the memory request)."""
    shm_size: str = Field(default="1Gi", pattern=QUANTITY)
    """Size of the memory-backed /dev/shm."""


class ModelControl(Model):
    mode: Literal["none", "poll", "explicit"] = "none"
    """Triton `--model-control-mode`: load all at start, poll the repository, or load only `load`."""
    load: list[str] = []
    """Models to load, mode `explicit` only."""
    poll_seconds: int = Field(default=30, ge=1)
    """Repository poll interval, mode `poll`."""

    @model_validator(mode="after")
    def _load_only_explicit(self) -> "ModelControl":
        if self.mode == "explicit" and not self.load:
            raise ValueError("mode 'explicit' needs load: the models to load")
        if self.mode != "explicit" and self.load:
            raise ValueError(f"load applies to mode 'explicit' only, mode is '{self.mode}'")
        return self


# Triton flags a version may set through serverArgs (names as in Triton's command-line
# parser). Flags the platform sets itself (ports, repository, model control, metrics
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
    "buffer-management-thread-count", "host-policy",
})


class Version(Model):
    name: str = Field(pattern=DNS_LABEL, max_length=20)
    """Version name (DNS label): the pods' `version` label and the Istio subset."""
    image: str = Field(pattern=r"^[^\s]+$")
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
    server_args: dict[str, str] = {}
    """Extra Triton server flags without the leading `--`, e.g. `{log-verbose: "1"}`; only flags the platform does not set itself are allowed (see TRITON_SERVER_FLAGS)."""
    model_config_name: Optional[str] = Field(default=None, pattern=r"^[A-Za-z0-9][-A-Za-z0-9_.]*$")
    """Tuned config variant, Triton's `--model-config-name` (from the model's `configs/` folder)."""
    replicas: int = Field(default=1, ge=0, le=1000)
    """Fixed replica count, used only when autoscaling is disabled."""
    autoscaling: Optional[Autoscaling] = None
    """Autoscaling of this version (default: the service's)."""

    @field_validator("server_args")
    @classmethod
    def _allowed_flags(cls, args: dict[str, str]) -> dict[str, str]:
        for flag in args:
            if flag not in TRITON_SERVER_FLAGS:
                raise ValueError(f"Triton flag {flag!r} is not allowed here; allowed: {', '.join(sorted(TRITON_SERVER_FLAGS))}")
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
    name: str = Field(pattern=DNS_LABEL, max_length=40)
    """Service name (DNS label): the Kubernetes Service and, by default, the namespace."""
    namespace: Optional[str] = Field(default=None, pattern=DNS_LABEL, max_length=63)
    """Namespace (default: the service name); services may share one."""
    hosts: list[str] = Field(min_length=1)
    """Host names served through the customer Gateway (no wildcards)."""
    auth: AuthSettings = AuthSettings()
    """Client authentication at the mesh."""
    autoscaling: Autoscaling = Autoscaling()
    """Autoscaling of every version (a version may override)."""
    timeout_seconds: float = Field(default=60, gt=0, le=3600)
    """Request timeout at the mesh."""
    retries: Retries = Retries()
    """Retries at the mesh."""
    mirror: Optional[Mirror] = None
    """Copy a share of live traffic to a shadow version."""
    versions: list[Version] = Field(min_length=1)
    """Deployed versions; weights sum to 100."""

    @field_validator("hosts")
    @classmethod
    def _no_wildcards(cls, hosts: list[str]) -> list[str]:
        for h in hosts:
            if not re.match(HOSTNAME, h) or h.startswith("*"):
                raise ValueError(f"{h!r} is not a host name such as models.example.com (wildcards are not allowed)")
        return hosts

    @property
    def k8s_namespace(self) -> str:
        return self.namespace or self.name


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


class Settings(Model):
    customer: str = Field(pattern=DNS_LABEL, max_length=30)
    """Customer name (DNS label)."""
    environment: str = Field(pattern=DNS_LABEL, max_length=20)
    """Environment name (DNS label), e.g. dev or prod."""
    production: bool = False
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
    weight_caches: WeightCacheSettings = WeightCacheSettings()
    """Caches of model weights."""
    services: list[Service] = []
    """Triton inference services."""
    policies: PolicySettings = PolicySettings()
    """Policy pack settings of this stack (`python -m platformctl policy-config` passes them to `pulumi preview --policy-pack`)."""
    kubeconfig: Optional[SecretStr] = None
    """Secret. kubeconfig of an existing cluster (set with `pulumi config set --secret kubeconfig "$(cat kubeconfig)"`)."""
    s3_access_key_id: Optional[SecretStr] = None
    """Secret. Access key of the S3 weight cache."""
    s3_secret_access_key: Optional[SecretStr] = None
    """Secret. Secret key of the S3 weight cache."""

    def node_group(self, name: str) -> NodeGroup:
        return next(g for g in self.cluster.node_groups if g.name == name)

    @property
    def gpu_groups(self) -> list[NodeGroup]:
        return [g for g in self.cluster.node_groups if g.is_gpu]


SECRET_KEYS = ("kubeconfig", "s3AccessKeyId", "s3SecretAccessKey")


# --------------------------------------------------------------------------- errors

Path = tuple[Union[str, int], ...]


def format_path(path: Path) -> str:
    """`("services", 1, "versions", 0, "weight")` -> `inference-platform:services[1].versions[0].weight`."""
    text = NAMESPACE + ":"
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

    def __init__(self, stack_file: str, problems: list[tuple[Path, str]]):
        self.stack_file = stack_file
        self.problems = problems
        super().__init__(self.one_line())

    def one_line(self) -> str:
        # Messages may echo input; the offline plan promises exactly one line.
        parts = [f"{format_path(p)}: {msg}".replace("\n", "\\n") for p, msg in self.problems]
        return f"{self.stack_file}: invalid configuration: " + "; ".join(parts)

    @property
    def paths(self) -> list[str]:
        return [format_path(p) for p, _ in self.problems]


def _pydantic_problems(err: ValidationError) -> list[tuple[Path, str]]:
    problems = []
    for e in err.errors(include_url=False):
        loc = tuple(p for p in e["loc"] if not (isinstance(p, str) and ("[" in p or p.startswith("function-"))))
        if e["type"] == "unknown_key":
            loc += (e["ctx"]["key"],)
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "missing":
            msg = "required key is missing"
        problems.append((loc, msg))
    return problems


# --------------------------------------------------------------------------- cross checks


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
        if s.cluster.mode == "magnum" and g.is_gpu and g.min_nodes == 0:
            problems.append((("cluster", "nodeGroups", i, "minNodes"),
                             "the Magnum cluster autoscaler cannot scale a group up from zero; "
                             "use minNodes: 1 and hold spare capacity with coldStart.spareSlots"))

    for group, _ in s.cold_start.spare_slots.items():
        if group not in groups or not groups[group].is_gpu:
            problems.append((("coldStart", "spareSlots", group), f"no GPU node group named {group!r}; GPU groups: {', '.join(gpu_names) or 'none'}"))

    if s.cluster.gpu_quota is not None:
        total = sum(g.max_nodes * g.gpu.per_node for g in s.gpu_groups)
        if total > s.cluster.gpu_quota:
            problems.append((("cluster", "gpuQuota"), f"GPU node groups can grow to {total} GPUs, over the quota of {s.cluster.gpu_quota}; lower maxNodes or raise gpuQuota"))

    if s.production and s.mesh.kiali_auth == "anonymous":
        problems.append((("mesh", "kialiAuth"), "anonymous Kiali is not allowed in a production stack; allowed: token, openid"))
    if s.observability.loki_storage == "s3" and s.weight_caches.s3 is None:
        problems.append((("observability", "lokiStorage"), "lokiStorage 's3' needs weightCaches.s3 (its endpoint and credentials)"))
    if s.weight_caches.s3 is not None:
        for key, value in (("s3AccessKeyId", s.s3_access_key_id), ("s3SecretAccessKey", s.s3_secret_access_key)):
            if value is None:
                problems.append(((key,), f"weightCaches.s3 needs the secret {NAMESPACE}:{key} (pulumi config set --secret {key} ...)"))

    names: dict[str, int] = {}
    hosts: dict[str, int] = {}
    for si, svc in enumerate(s.services):
        base: Path = ("services", si)
        if svc.name in names:
            problems.append((base + ("name",), f"duplicate service name {svc.name!r} (also services[{names[svc.name]}])"))
        names.setdefault(svc.name, si)
        for hi, host in enumerate(svc.hosts):
            if host in hosts and hosts[host] != si:
                problems.append((base + ("hosts", hi), f"host {host!r} is already served by services[{hosts[host]}]"))
            hosts.setdefault(host, si)
        if svc.auth.mode == "none" and s.production:
            problems.append((base + ("auth", "mode"), "auth mode 'none' is not allowed in a production stack; allowed: basic, jwt"))

        total = sum(v.weight for v in svc.versions)
        if total != 100:
            weights = " + ".join(str(v.weight) for v in svc.versions)
            problems.append((base + ("versions",), f"version weights sum to {total} ({weights}); they must sum to 100"))
        version_names: set[str] = set()
        for vi, v in enumerate(svc.versions):
            vpath = base + ("versions", vi)
            if v.name in version_names:
                problems.append((vpath + ("name",), f"duplicate version name {v.name!r} in service {svc.name!r}"))
            version_names.add(v.name)
            group = groups.get(v.gpu.group)
            if group is None or not group.is_gpu:
                problems.append((vpath + ("gpu", "group"), f"no GPU node group named {v.gpu.group!r}; GPU groups: {', '.join(gpu_names) or 'none'}"))
            elif v.gpu.mig_profile is not None and not (
                group.gpu.sharing.mode == "mig" and group.gpu.sharing.effective_mig_strategy == "mixed"
            ):
                problems.append((vpath + ("gpu", "migProfile"), f"migProfile applies to groups with MIG strategy 'mixed'; group {group.name!r} is not one"))
            elif group.gpu.sharing.mode == "mig" and group.gpu.sharing.effective_mig_strategy == "mixed" and v.gpu.mig_profile is None:
                problems.append((vpath + ("gpu", "migProfile"), f"group {group.name!r} uses MIG strategy 'mixed': say which slice with migProfile"))
            cache = v.model_repository.cache
            if (cache == "fileShare" and s.weight_caches.file_share is None) or (cache == "s3" and s.weight_caches.s3 is None):
                configured = [k for k, c in (("fileShare", s.weight_caches.file_share), ("s3", s.weight_caches.s3)) if c]
                problems.append((vpath + ("modelRepository", "cache"), f"weight cache {cache!r} is not configured under weightCaches; configured: {', '.join(configured) or 'none'}"))
        if svc.mirror is not None and svc.mirror.version not in version_names:
            problems.append((base + ("mirror", "version"), f"no version named {svc.mirror.version!r}; versions: {', '.join(sorted(version_names))}"))
    return problems


# --------------------------------------------------------------------------- loading


def parse_settings(raw: dict[str, Any], stack_file: str, secret_keys: frozenset[str] = frozenset()) -> Settings:
    """Validate a dict of config keys (without the namespace prefix) into Settings, or raise ConfigError."""
    problems: list[tuple[Path, str]] = []
    for key in SECRET_KEYS:
        if key in raw and key not in secret_keys:
            problems.append(((key,), f"must be a secret; set it with `pulumi config set --secret {key} ...`"))
    if problems:
        raise ConfigError(stack_file, problems)
    try:
        settings = Settings.model_validate(raw)
    except ValidationError as err:
        raise ConfigError(stack_file, _pydantic_problems(err)) from None
    problems = cross_checks(settings)
    if not problems:
        # Imported here: gpu_profiles builds on this module's settings classes.
        from .gpu_profiles import check_gpu_settings

        problems = check_gpu_settings(settings)
    if problems:
        raise ConfigError(stack_file, problems)
    return settings


def _decode(value: Any) -> Any:
    # Structured values arrive from the engine as JSON text; scalars as plain strings.
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def load_settings() -> Settings:
    """Read this stack's `inference-platform:*` config from the Pulumi runtime."""
    import pulumi
    from pulumi.runtime import config as runtime_config

    stack_file = f"stacks/Pulumi.{pulumi.get_stack()}.yaml"
    prefix = NAMESPACE + ":"
    merged = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    raw = {k[len(prefix):]: _decode(v) for k, v in merged.items() if k.startswith(prefix)}
    secret = set(runtime_config._SECRET_KEYS.get()) | set(runtime_config.get_config_secret_keys_env())
    secret_keys = frozenset(k[len(prefix):] for k in secret if k.startswith(prefix))
    return parse_settings(raw, stack_file, secret_keys)
