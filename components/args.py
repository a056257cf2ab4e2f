"""Argument types of the components, generated from their inputs models and the settings
models by `python -m platformctl docs`; do not edit. Keys are the models' Python names
(the Pulumi schema and the stack file spell them in camelCase)."""

# Ruff reads the strings inside Literal[...] as names (Literal is bound twice below); importing this
# module evaluates every annotation, so a real undefined name still fails.
# ruff: noqa: E501, F722, F821

from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

import pulumi

if TYPE_CHECKING:
    from typing import Literal
else:
    class Literal:
        """A choice field: `Literal[...]` to type checkers; its values' type to the Pulumi schema
        analyzer, which knows Enum classes but not Literal (the description lists the choices)."""

        def __class_getitem__(cls, values):
            return type(values[0] if isinstance(values, tuple) else values)


class ExistingClusterArgs(TypedDict):
    """Arguments of `ExistingCluster` (see the configuration reference, docs/reference.md)."""

    context: NotRequired[str]
    """kubeconfig context to use. The kubeconfig itself comes from the secret key `inference-platform:kubeconfig`, or else the ambient one (KUBECONFIG or ~/.kube/config)."""


class MagnumTemplateArgs(TypedDict):
    """Arguments of `MagnumTemplate` (see the configuration reference, docs/reference.md)."""

    image: NotRequired[str]
    """Glance image of the cluster's nodes, by the cloud's name for it: an image with the Kubernetes of kubernetesVersion and the `os_distro` property the driver selects on (`ubuntu`, `debian`, `rockylinux`, `flatcar` or `fedora-coreos`). Set `os` to what it is. Default: `ubuntu-24.04`."""
    os: NotRequired[Literal["ubuntu-22.04", "ubuntu-24.04", "ubuntu-26.04", "debian-12", "debian-13", "rhel-8", "rhel-9", "rhel-10", "rocky-8", "rocky-9", "rocky-10", "flatcar", "fedora-coreos"]]
    """OS of `image` (the platform cannot read it from the image, so it must describe the image): one the Magnum driver boots, and the default OS of every node group (docs/gpu.md: OS and GPU driver mode). One of: `ubuntu-22.04`, `ubuntu-24.04`, `ubuntu-26.04`, `debian-12`, `debian-13`, `rhel-8`, `rhel-9`, `rhel-10`, `rocky-8`, `rocky-9`, `rocky-10`, `flatcar`, `fedora-coreos`. Default: `ubuntu-24.04`."""
    external_network_id: NotRequired[str]
    """External network for floating IPs and load balancers. Default: `public`."""
    master_flavor: NotRequired[str]
    """Flavor of control-plane nodes. Default: `m1.large`."""
    flavor: NotRequired[str]
    """Default flavor of worker nodes. Default: `m1.large`."""
    docker_volume_size: NotRequired[int]
    """Container storage volume per node, GB (Triton images are large). Default: `100`."""
    network_driver: NotRequired[Literal["calico", "flannel", "cilium"]]
    """Kubernetes network driver (calico supports NetworkPolicy). One of: `calico`, `flannel`, `cilium`. Default: `calico`."""
    dns_nameserver: NotRequired[str]
    """DNS nameserver of the cluster network. Default: `8.8.8.8`."""
    master_lb_enabled: NotRequired[bool]
    """Put a load balancer in front of the API servers. Default: `true`."""
    floating_ip_enabled: NotRequired[bool]
    """Give every node a floating IP. Default: `false`."""
    labels: NotRequired[dict[str, str]]
    """Extra Magnum labels, merged over the platform's own (autoscaling and version labels); keys of lowercase letters, digits and `_`."""


class MagnumClusterArgs(TypedDict):
    """Arguments of `MagnumCluster` (see the configuration reference, docs/reference.md)."""

    driver: NotRequired[Literal["clusterApi", "heat"]]
    """Which Magnum Kubernetes driver the cloud runs: `clusterApi` (Cluster API, the maintained drivers) or `heat` (Magnum's Heat driver: Fedora CoreOS only, deprecated in 2025.1 and removed after 2026.1). One of: `clusterApi`, `heat`. Default: `clusterApi`."""
    cluster_api_driver: NotRequired[Literal["magnum-cluster-api", "magnum-capi-helm"]]
    """With driver `clusterApi`: which Cluster API driver: `magnum-cluster-api` (vexxhost) or `magnum-capi-helm` (openstack/magnum-capi-helm). They read different labels and label nodes differently. One of: `magnum-cluster-api`, `magnum-capi-helm`. Default: `magnum-cluster-api`."""
    template_id: NotRequired[str]
    """Use this existing ClusterTemplate instead of creating one from `template`."""
    template: NotRequired[MagnumTemplateArgs]
    """ClusterTemplate to create when templateId is not set."""
    kubernetes_version: NotRequired[str]
    """Kubernetes version (the `kube_tag` label). `magnum-cluster-api`: `v1.34.1`. `heat`: a tag of the hyperkube image, `v1.34.1-rancher1` from docker.io/rancher (plain `v1.34.1` only with your own `hyperkube_prefix` or `container_infra_prefix` template label). `magnum-capi-helm` takes the version from the image's `kube_version` property instead: set the same version here. Default: `v1.34.1`."""
    master_count: NotRequired[int]
    """Control-plane nodes (1, 3 or 5 in practice; 3 for production). Default: `1`."""
    keypair: NotRequired[str]
    """Nova keypair for node access."""
    fixed_network: NotRequired[str]
    """Existing network for the cluster, name or ID (default: Magnum creates one). Needs fixedSubnet."""
    fixed_subnet: NotRequired[str]
    """Existing subnet of fixedNetwork, name or ID; its CIDR (looked up in Neutron) is what may mount the file share."""
    subnet_cidr: NotRequired[str]
    """CIDR of the node subnet Magnum creates (the `fixed_subnet_cidr` label), which may mount the file share. Not with fixedSubnet. Default: `10.0.0.0/24`."""
    api_floating_ip: NotRequired[bool]
    """A floating IP on the API server's load balancer (`master_lb_floating_ip_enabled`), so that `pulumi up`, which reaches the new cluster with its kubeconfig, can connect from outside the cluster network. Default: `true`."""
    api_allowed_cidrs: NotRequired[list[str]]
    """Source CIDRs allowed to reach the API load balancer (empty: any). `heat` only (`master_lb_allowed_cidrs`; Magnum adds the node subnet): `magnum-cluster-api` has no such label, and what magnum-capi-helm passes (`apiServer.allowedCidrs`) the openstack-cluster chart does not apply. Include where `pulumi up` runs."""


class TaintArgs(TypedDict):
    """Arguments of `Taint` (see the configuration reference, docs/reference.md)."""

    key: str
    """Taint key."""
    value: NotRequired[str]
    """Taint value (may be empty)."""
    effect: NotRequired[Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]]
    """Taint effect. One of: `NoSchedule`, `PreferNoSchedule`, `NoExecute`. Default: `NoSchedule`."""


class GpuSharingArgs(TypedDict):
    """Arguments of `GpuSharing` (see the configuration reference, docs/reference.md)."""

    mode: NotRequired[Literal["none", "mig", "time-slicing", "mps"]]
    """How one physical GPU is shared: `none` (whole GPUs), `mig` (hardware partitions), `time-slicing` or `mps` (replicas of one GPU). One of: `none`, `mig`, `time-slicing`, `mps`. Default: `none`."""
    mig_strategy: NotRequired[Literal["single", "mixed"]]
    """MIG only: `single` (all slices alike, advertised as `nvidia.com/gpu`) or `mixed` (advertised as `nvidia.com/mig-<profile>`). Default `single`. One of: `single`, `mixed`."""
    mig_profile: NotRequired[Any]
    """MIG only: a named mig-parted profile (e.g. `all-1g.10gb`) or a custom mix per GPU, e.g. `{1g.10gb: 2, 3g.40gb: 1}`."""
    replicas: NotRequired[int]
    """Time-slicing / MPS only: how many workloads share one GPU (2-48)."""
    rename_by_default: NotRequired[bool]
    """Time-slicing / MPS only: advertise shared GPUs as `nvidia.com/gpu.shared` instead of `nvidia.com/gpu`. Default: `false`."""


class GpuSpecArgs(TypedDict):
    """Arguments of `GpuSpec` (see the configuration reference, docs/reference.md)."""

    model: Literal["A100-40GB", "A100-80GB", "H100-80GB", "H100-94GB", "H200-141GB", "A30-24GB", "L40S-48GB", "L4-24GB", "T4-16GB"]
    """GPU model of every node in the group. One of: `A100-40GB`, `A100-80GB`, `H100-80GB`, `H100-94GB`, `H200-141GB`, `A30-24GB`, `L40S-48GB`, `L4-24GB`, `T4-16GB`."""
    per_node: NotRequired[int]
    """Physical GPUs per node. Default: `1`."""
    sharing: NotRequired[GpuSharingArgs]
    """GPU sharing profile of the group."""


class NodeGroupArgs(TypedDict):
    """Arguments of `NodeGroup` (see the configuration reference, docs/reference.md)."""

    name: str
    """Group name (DNS label); services place versions on GPU groups by this name."""
    flavor: NotRequired[str]
    """OpenStack flavor of the group's nodes (Magnum clusters: required for every group after the first, which defaults to the template's flavor)."""
    image: NotRequired[str]
    """Magnum only: Glance image of the group's nodes (default: the cluster template's image)."""
    os: NotRequired[Literal["ubuntu-22.04", "ubuntu-24.04", "ubuntu-26.04", "debian-12", "debian-13", "rhel-8", "rhel-9", "rhel-10", "rocky-8", "rocky-9", "rocky-10", "flatcar", "fedora-coreos"]]
    """OS of the group's nodes, which decides the GPU driver modes that work (docs/gpu.md: OS and GPU driver mode). Mode `magnum`: default the template's `os`; required with `image` on a GPU group. Mode `existing`: required on GPU groups while the GPU operator installs the driver (driver mode `precompiled` or `compiled`). One of: `ubuntu-22.04`, `ubuntu-24.04`, `ubuntu-26.04`, `debian-12`, `debian-13`, `rhel-8`, `rhel-9`, `rhel-10`, `rocky-8`, `rocky-9`, `rocky-10`, `flatcar`, `fedora-coreos`."""
    min_nodes: NotRequired[int]
    """Fewest nodes the cluster autoscaler keeps. Default: `1`."""
    max_nodes: NotRequired[int]
    """Most nodes the cluster autoscaler may create. Default: `1`."""
    initial_nodes: NotRequired[int]
    """Heat only: nodes at creation (default: minNodes). The Cluster API drivers start an autoscaled group at minNodes (Cluster API defaults its MachineDeployment's replicas to the minimum), so there a value above minNodes is refused: raise minNodes instead."""
    labels: NotRequired[dict[str, str]]
    """Extra Kubernetes node labels, which Node Feature Discovery applies: keys with a prefix of your own (not `kubernetes.io`), neither the platform's labels nor the selector's."""
    taints: NotRequired[list[TaintArgs]]
    """Extra Kubernetes node taints, which Node Feature Discovery applies: keys with a prefix of your own (not `kubernetes.io`), one per key and effect (GPU groups get `nvidia.com/gpu=present:NoSchedule` in addition)."""
    selector: NotRequired[dict[str, str]]
    """Labels that single out this group's nodes, which the platform's pods select and its node rules match. Mode `existing`: required (the labels the nodes already carry, e.g. a node pool's label). Mode `magnum`: leave unset; the label the Magnum driver gives the group's nodes is used."""
    gpu: NotRequired[GpuSpecArgs]
    """GPUs of the group's nodes; absent for a CPU group."""


class ClusterSettingsArgs(TypedDict):
    """Arguments of `ClusterSettings` (see the configuration reference, docs/reference.md)."""

    mode: NotRequired[Literal["existing", "magnum"]]
    """`magnum`: create an OpenStack Magnum cluster; `existing`: use a cluster that already exists. One of: `existing`, `magnum`. Default: `existing`."""
    existing: NotRequired[ExistingClusterArgs]
    """Settings of mode `existing`."""
    magnum: NotRequired[MagnumClusterArgs]
    """Settings of mode `magnum`."""
    gpu_quota: NotRequired[int]
    """Most GPUs the stack may run (sum over GPU groups of maxNodes x GPUs per node); unset means no limit."""
    node_groups: list[NodeGroupArgs]
    """Node groups: at least one; CPU groups have no `gpu` key."""


class DriverSettingsArgs(TypedDict):
    """Arguments of `DriverSettings` (see the configuration reference, docs/reference.md)."""

    mode: NotRequired[Literal["precompiled", "compiled", "preinstalled"]]
    """`precompiled`: driver images NVIDIA builds per kernel (fastest node start; Ubuntu only); `compiled`: built on each node (the OSes the GPU operator supports); `preinstalled`: the node image has the driver (any OS). Checked against each GPU group's `os`. One of: `precompiled`, `compiled`, `preinstalled`. Default: `precompiled`."""
    branch: NotRequired[str]
    """Driver branch (precompiled: one NVIDIA publishes for the nodes' OS, 580 or 595; 595 only on Ubuntu 26.04) or the major of the pinned driver version (compiled: 595). Default: `595`."""


class GpuOperatorSettingsArgs(TypedDict):
    """Arguments of `GpuOperatorSettings` (see the configuration reference, docs/reference.md)."""

    enabled: NotRequired[bool]
    """Install the NVIDIA GPU operator, and with it Node Feature Discovery, which applies the node groups' labels and taints. Off: the nodes of an existing cluster must carry them already; a Magnum cluster then may not have GPU groups, node labels or taints. On `magnum-capi-helm` the cluster runs its own operator and NFD (capi-helm-charts addons): the platform reuses them and adds only its node rules, so `driver`, `dcgmExporter`, node taints, time-slicing, MPS, custom MIG mixes and MIG strategy `mixed` are refused there. Default: `true`."""
    driver: NotRequired[DriverSettingsArgs]
    """NVIDIA driver installation."""
    dcgm_exporter: NotRequired[bool]
    """Run the DCGM exporter (GPU metrics) with its ServiceMonitor. Default: `true`."""


class StageSecondsArgs(TypedDict):
    """Arguments of `StageSeconds` (see the configuration reference, docs/reference.md)."""

    node_boot: NotRequired[int]
    """Seconds for a new VM to boot and join the cluster. Default: `120`."""
    driver_install: NotRequired[int]
    """Seconds for the GPU operator to prepare a node (precompiled drivers). Default: `180`."""
    driver_compile: NotRequired[int]
    """Extra seconds to build the driver's kernel module on the node (driver mode `compiled`). Default: `300`."""
    image_pull: NotRequired[int]
    """Seconds to pull and extract a Triton image (about 360 for 20 GB gzip layers, 150 with zstd). Default: `360`."""
    weight_fetch: NotRequired[int]
    """Seconds Triton needs to download an S3 model repository to local disk before loading it (file-share versions read in place). Default: `210`."""
    model_load: NotRequired[int]
    """Seconds for Triton to load the model. Default: `420`."""


class ColdStartSettingsArgs(TypedDict):
    """Arguments of `ColdStartSettings` (see the configuration reference, docs/reference.md)."""

    image_pre_pull: NotRequired[bool]
    """Pre-pull every Triton image on the GPU groups it runs on: a replica that takes a spare slot, or lands on a node that is already up, starts without the pull. It does not shorten a new node's start (the kubelet pulls one image at a time, so the pull follows or delays the driver's images). Default: `true`."""
    spare_slots: NotRequired[dict[str, int]]
    """Per GPU group, GPU slots held free by low-priority placeholder pods so a new replica starts at once (0-64 each)."""
    stage_seconds: NotRequired[StageSecondsArgs]
    """Stage durations used for the plan's cold-start estimate."""


class GatewayTlsArgs(TypedDict):
    """Arguments of `GatewayTls` (see the configuration reference, docs/reference.md)."""

    enabled: NotRequired[bool]
    """Serve HTTPS on the ingress gateway. Default: `false`."""
    secret_name: NotRequired[str]
    """Kubernetes TLS Secret (in istio-system) holding the certificate; required when enabled."""


class KialiOpenIdArgs(TypedDict):
    """Arguments of `KialiOpenId` (see the configuration reference, docs/reference.md)."""

    issuer_uri: str
    """The identity provider's issuer URL (Kiali reads its discovery document)."""
    client_id: str
    """Kiali's client id at the identity provider. The client secret goes into the Secret `kiali` (key `oidc-secret`) in istio-system, created by the identity-provider owner."""
    username_claim: NotRequired[str]
    """Token claim shown as the user name. Default: `sub`."""


class MeshSettingsArgs(TypedDict):
    """Arguments of `MeshSettings` (see the configuration reference, docs/reference.md)."""

    enabled: NotRequired[bool]
    """Install Istio (base, istiod, ingress gateway). Default: `true`."""
    gateway_annotations: NotRequired[dict[str, str]]
    """Annotations of the ingress gateway's LoadBalancer Service (e.g. Octavia settings), and of each LLM service's Gateway's (at most 8 then, none under `gateway.networking.k8s.io/`: the Gateway passes them as `spec.infrastructure.annotations`)."""
    tls: NotRequired[GatewayTlsArgs]
    """TLS of the customer Gateway."""
    allow_plain_http_credentials: NotRequired[bool]
    """Serve `basic` and `jwt` services and graphs over plain HTTP while `tls` is off without the plan's warning; non-production stacks only (their credentials then cross the network unencrypted; a production stack refuses them without `tls`). Default: `false`."""
    tracing_sampling_percent: NotRequired[float]
    """Percent of requests traced to Jaeger. Default: `1.0`."""
    jaeger_storage: NotRequired[Literal["memory", "persistent"]]
    """Jaeger trace storage. One of: `memory`, `persistent`. Default: `memory`."""
    jaeger_storage_size: NotRequired[str]
    """Volume size for persistent Jaeger storage. Default: `10Gi`."""
    kiali_auth: NotRequired[Literal["token", "openid", "anonymous"]]
    """Kiali login strategy; in production stacks `anonymous` is refused, and so is `token` when `ui.kiali` serves Kiali on a host (a ServiceAccount token would be the login from the internet). One of: `token`, `openid`, `anonymous`. Default: `token`."""
    kiali_openid: NotRequired[KialiOpenIdArgs]
    """Identity provider of Kiali's `openid` strategy (required with it)."""


class AlertThresholdsArgs(TypedDict):
    """Arguments of `AlertThresholds` (see the configuration reference, docs/reference.md)."""

    queue_time_ms: NotRequired[float]
    """Average Triton queue time above which the queue-time alert fires, milliseconds (0.001-600000). Default: `100.0`."""
    failure_ratio: NotRequired[float]
    """Share of failed inference requests above which the failure alerts fire (Triton failures per version, requests the gateway cut at the route timeout, and the errors of a Ray graph's step; 0.0001 to below 1). Default: `0.05`."""
    gpu_memory_ratio: NotRequired[float]
    """GPU framebuffer use above which the GPU memory alert fires. Default: `0.95`."""


class WebhookReceiverArgs(TypedDict):
    """Alerts POSTed as Alertmanager's webhook JSON; the URL is the receiver's secret."""

    send_resolved: NotRequired[bool]
    """Also send a notification when the alert clears. Default: `true`."""


class SlackReceiverArgs(TypedDict):
    """Alerts posted to a Slack channel; the incoming-webhook URL is the receiver's secret."""

    channel: str
    """Channel (`#name`) or user (`@name`) to post to."""
    send_resolved: NotRequired[bool]
    """Also post when the alert clears. Default: `true`."""


class EmailReceiverArgs(TypedDict):
    """Alerts e-mailed through an SMTP relay; the SMTP password is the receiver's secret."""

    to: str
    """Recipient address."""
    from_: str
    """Sender address."""
    smarthost: str
    """SMTP relay as `host:port`, e.g. `smtp.example.com:587`."""
    auth_username: str
    """SMTP user name (the password is the receiver's secret)."""
    require_tls: NotRequired[bool]
    """Refuse to send unless the relay offers STARTTLS. Default: `true`."""


class PagerDutyReceiverArgs(TypedDict):
    """Alerts sent to a PagerDuty service through Events API v2; the integration (routing) key is the receiver's secret."""

    send_resolved: NotRequired[bool]
    """Resolve the PagerDuty incident when the alert clears. Default: `true`."""


class AlertReceiverArgs(TypedDict):
    """Arguments of `AlertReceiver` (see the configuration reference, docs/reference.md)."""

    name: str
    """Receiver name (DNS label), referred to by `critical` and `warning`; its secret is `alertReceiverSecrets.<name>`."""
    webhook: NotRequired[WebhookReceiverArgs]
    """Send to a webhook (secret: its URL)."""
    slack: NotRequired[SlackReceiverArgs]
    """Send to Slack (secret: the incoming-webhook URL)."""
    email: NotRequired[EmailReceiverArgs]
    """Send e-mail (secret: the SMTP password)."""
    pagerduty: NotRequired[PagerDutyReceiverArgs]
    """Send to PagerDuty (secret: the Events API v2 routing key)."""


class AlertingSettingsArgs(TypedDict):
    """Arguments of `AlertingSettings` (see the configuration reference, docs/reference.md)."""

    receivers: NotRequired[list[AlertReceiverArgs]]
    """Where alerts go: webhook, Slack, e-mail or PagerDuty receivers. With none, Alertmanager keeps every alert to itself (receiver `null`)."""
    critical: NotRequired[list[str]]
    """Receivers of alerts with severity `critical` (each gets every one)."""
    warning: NotRequired[list[str]]
    """Receivers of alerts with severity `warning`."""
    repeat_interval: NotRequired[str]
    """How often a firing alert is sent again, e.g. `4h`. Default: `4h`."""


class ObservabilitySettingsArgs(TypedDict):
    """Arguments of `ObservabilitySettings` (see the configuration reference, docs/reference.md)."""

    enabled: NotRequired[bool]
    """Install kube-prometheus-stack, prometheus-adapter, Loki, Alloy and Grafana. Default: `true`."""
    prometheus_retention: NotRequired[str]
    """How long Prometheus keeps samples. Default: `15d`."""
    prometheus_storage_size: NotRequired[str]
    """Prometheus volume size. Default: `50Gi`."""
    storage_class: NotRequired[str]
    """StorageClass of observability volumes (default: the cluster default)."""
    loki_storage: NotRequired[Literal["filesystem", "s3"]]
    """Loki chunk storage: a volume, or the S3 weight cache's endpoint. One of: `filesystem`, `s3`. Default: `filesystem`."""
    loki_storage_size: NotRequired[str]
    """Loki volume size (filesystem storage). Default: `20Gi`."""
    loki_retention: NotRequired[str]
    """How long Loki keeps logs. Default: `168h`."""
    alerts: NotRequired[AlertThresholdsArgs]
    """Alert thresholds."""
    alerting: NotRequired[AlertingSettingsArgs]
    """Alertmanager receivers and which severities reach them (docs/observability.md: Routing alerts)."""


class GrafanaOidcArgs(TypedDict):
    """Arguments of `GrafanaOidc` (see the configuration reference, docs/reference.md)."""

    auth_url: str
    """The identity provider's authorization endpoint (Grafana `auth.generic_oauth` `auth_url`)."""
    token_url: str
    """The identity provider's token endpoint (`token_url`)."""
    api_url: str
    """The identity provider's user-info endpoint (`api_url`)."""
    client_id: str
    """Grafana's client id at the identity provider. The client secret is the stack secret `grafanaOidcClientSecret`; register `https://<ui.grafana.host>/login/generic_oauth` as the redirect URL."""
    scopes: NotRequired[list[str]]
    """OAuth scopes Grafana asks for (printable ASCII without spaces, `"` or `\\`). Default: `['openid', 'email', 'profile']`."""
    role_attribute_path: NotRequired[str]
    """JMESPath over the user info that yields the Grafana role (`Admin`, `Editor` or `Viewer`); unset: every user signs in as a Viewer."""


class GrafanaUiArgs(TypedDict):
    """Arguments of `GrafanaUi` (see the configuration reference, docs/reference.md)."""

    host: str
    """Host name Grafana is served on through the ingress gateway."""
    auth: NotRequired[Literal["admin", "oidc"]]
    """Login: `admin` (user `admin`, password in the stack output `grafanaAdminPassword`) or `oidc` (an identity provider, with the admin login kept for recovery). One of: `admin`, `oidc`. Default: `admin`."""
    oidc: NotRequired[GrafanaOidcArgs]
    """Identity provider of auth `oidc` (required with it)."""


class KialiUiArgs(TypedDict):
    """Arguments of `KialiUi` (see the configuration reference, docs/reference.md)."""

    host: str
    """Host name Kiali is served on through the ingress gateway (at `/`; login as `mesh.kialiAuth` says)."""


class UiSettingsArgs(TypedDict):
    """Arguments of `UiSettings` (see the configuration reference, docs/reference.md)."""

    grafana: NotRequired[GrafanaUiArgs]
    """Serve Grafana on a host of its own (off when unset: reach it with `kubectl port-forward`)."""
    kiali: NotRequired[KialiUiArgs]
    """Serve Kiali on a host of its own (off when unset). Jaeger has no host: its traces are read in Grafana (Jaeger datasource) and Kiali."""
    allow_plain_http: NotRequired[bool]
    """Serve the UI hosts over plain HTTP while `mesh.tls` is off; non-production stacks only (logins then cross the network unencrypted). Default: `false`."""


class FileShareCacheArgs(TypedDict):
    """Arguments of `FileShareCache` (see the configuration reference, docs/reference.md)."""

    mode: NotRequired[Literal["manila", "existing"]]
    """`manila`: create an OpenStack Manila NFS share; `existing`: mount an NFS export that exists. One of: `manila`, `existing`. Default: `manila`."""
    size_gb: NotRequired[int]
    """Share size, GB (manila). Default: `500`."""
    share_type: NotRequired[str]
    """Manila share type (default: the cloud's default)."""
    share_network_id: NotRequired[str]
    """Manila share network (needed by drivers that manage share servers)."""
    access_cidrs: NotRequired[list[str]]
    """Client CIDRs allowed to mount the share (default: the cluster's subnet)."""
    server: NotRequired[str]
    """NFS server (existing): a host name or an IP address."""
    path: NotRequired[str]
    """NFS export path (existing), absolute."""
    storage_size: NotRequired[str]
    """Capacity of the PersistentVolumes that expose the share. Default: `500Gi`."""


class WeightUploadArgs(TypedDict):
    """Arguments of `WeightUpload` (see the configuration reference, docs/reference.md)."""

    source: str
    """Local model-repository directory (relative to the project) to upload: an existing, readable directory, not a system directory."""
    prefix: str
    """Key prefix in the bucket."""
    presets: NotRequired[list[str]]
    """Tuning presets (built-in `latency`, `throughput`, or `tuningPresets` names) rendered for every model of the source that has a config.pbtxt, uploaded as `<model>/configs/<preset>.pbtxt` (select one with a version's modelConfigName)."""


class S3MountArgs(TypedDict):
    """Arguments of `S3Mount` (see the configuration reference, docs/reference.md)."""

    enabled: NotRequired[bool]
    """Install the csi-s3 driver (GeeseFS) and expose the bucket as the claim `model-weights-s3-mount` in each namespace that reads from S3, for readers that want a POSIX path (mount it readOnly; Triton keeps its `s3://` URL). Default: `false`."""
    prefix: NotRequired[str]
    """Key prefix to mount instead of the whole bucket, e.g. `models`."""
    mount_options: NotRequired[str]
    """GeeseFS options of the mount (`--memory-limit` is MB of node memory per mounted volume). Default: `--memory-limit 1000 --dir-mode 0555 --file-mode 0444`."""
    storage_size: NotRequired[str]
    """Nominal capacity of the PersistentVolumes (S3 has no size; binding needs one). Default: `1Ti`."""


class S3CacheArgs(TypedDict):
    """Arguments of `S3Cache` (see the configuration reference, docs/reference.md)."""

    endpoint: str
    """S3-compatible endpoint URL, e.g. https://s3.example.cloud (credentials: secret keys `inference-platform:s3AccessKeyId` and `s3SecretAccessKey`)."""
    region: NotRequired[str]
    """Region name the endpoint expects. Default: `us-east-1`."""
    bucket: str
    """Bucket name (S3 naming rules; with lokiStorage `s3`, `<bucket>-logs` must be one too)."""
    versioning: NotRequired[bool]
    """Keep object versions. Default: `true`."""
    noncurrent_days: NotRequired[int]
    """Days after which old object versions expire. Default: `30`."""
    force_destroy: NotRequired[bool]
    """Allow deleting a non-empty bucket (every object version goes with it); not allowed with `adopt`. Default: `false`."""
    adopt: NotRequired[bool]
    """Use a bucket of ours that already exists (its data stays; our settings are applied to it), and Loki's `<bucket>-logs` with lokiStorage `s3`. Without it an existing bucket is an error, so a typo in `bucket` cannot take over another stack's data. An adopted bucket is never emptied or deleted: removing it from the stack only forgets it. Default: `false`."""
    uploads: NotRequired[list[WeightUploadArgs]]
    """Local model repositories uploaded to the bucket on every `pulumi up` (content-hashed; unchanged files are skipped)."""
    mount: NotRequired[S3MountArgs]
    """Optional mount of the bucket as a file system (csi-s3); off by default."""


class WeightCacheSettingsArgs(TypedDict):
    """Arguments of `WeightCacheSettings` (see the configuration reference, docs/reference.md)."""

    file_share: NotRequired[FileShareCacheArgs]
    """NFS file share mounted read-only into every replica that uses it."""
    s3: NotRequired[S3CacheArgs]
    """S3 bucket Triton reads model repositories from."""


class JwtAuthArgs(TypedDict):
    """Arguments of `JwtAuth` (see the configuration reference, docs/reference.md)."""

    issuer: str
    """Token issuer (`iss`)."""
    jwks_uri: str
    """URL of the issuer's JSON Web Key Set."""
    audiences: NotRequired[list[str]]
    """Accepted audiences (`aud`); empty accepts any, which a production stack refuses."""


class BasicAuthRotationArgs(TypedDict):
    """Arguments of `BasicAuthRotation` (see the configuration reference, docs/reference.md)."""

    generation: NotRequired[int]
    """The credential clients are given (the Secret and the `credentials` output). Raise it by one to rotate: a new username and password are generated, and the gateway accepts them beside the `previous` generation's. Generation 1 has the username `<name>`, generation n the username `<name>-g<n>`. Default: `1`."""
    previous: NotRequired[int]
    """A generation the gateway still accepts while clients move to the new one (lower than `generation`); remove the key to revoke it."""


class AuthSettingsArgs(TypedDict):
    """Arguments of `AuthSettings` (see the configuration reference, docs/reference.md)."""

    mode: NotRequired[Literal["basic", "jwt", "none"]]
    """`basic`: generated credentials checked at the mesh; `jwt`: tokens from an identity provider; `none`: open (non-production stacks only). One of: `basic`, `jwt`, `none`. Default: `basic`."""
    realm: NotRequired[str]
    """Basic Auth realm (default: the service name) of the VirtualService's 401 to a request with no Basic credential, the gate behind the gateway's basic_auth filter: 1-64 printable ASCII characters without `"` or `\\`. The filter answers first, with the request's URL as the realm."""
    jwt: NotRequired[JwtAuthArgs]
    """Identity provider, for mode `jwt`."""
    basic: NotRequired[BasicAuthRotationArgs]
    """Basic Auth credential rotation, for mode `basic` (default: generation 1, no previous). See the rotation procedure in docs/operations.md."""


class AutoscalingArgs(TypedDict):
    """Arguments of `Autoscaling` (see the configuration reference, docs/reference.md)."""

    enabled: NotRequired[bool]
    """Scale each version with an HPA on Triton's average queue time and its backlog of waiting requests. Default: `true`."""
    min_replicas: NotRequired[int]
    """Fewest replicas per version. Default: `1`."""
    max_replicas: NotRequired[int]
    """Most replicas per version. Default: `3`."""
    queue_time_target_us: NotRequired[int]
    """Target per-pod average queue time, microseconds. Default: `50000`."""
    pending_requests_target: NotRequired[int]
    """Target per-pod number of requests waiting in Triton's queue (the pod's worst model, or `queueTimeModel`), a second HPA metric beside queue time; the HPA follows whichever asks for more replicas. Triton adds queue time only for requests that succeed, so when a saturated server rejects or times out requests its queue time falls while this backlog keeps rising. Set it to about twice what one replica batches at once (preferred batch size times instances): lower scales out under normal load. Default: `16`."""
    scale_down_stabilization_seconds: NotRequired[int]
    """How long load must stay low before replicas are removed. Default: `300`."""
    queue_time_model: NotRequired[str]
    """Triton model whose queue time and backlog the HPA scales on (e.g. the bottleneck step of an ensemble). Default: the worst model of each pod, i.e. the highest per-model values. It becomes a selector on Triton's `model` label, so it must also be a Kubernetes label value (at most 63 characters of [A-Za-z0-9-_.], starting and ending alphanumeric). A name no pod serves gives the HPA no metric, and it keeps the current replica count."""


class RetriesArgs(TypedDict):
    """Arguments of `Retries` (see the configuration reference, docs/reference.md)."""

    attempts: NotRequired[int]
    """Retries per request after the first try (0 disables retries: Istio then sets no retry policy at all, rather than its own default of 2 retries). Default: `2`."""
    per_try_timeout_seconds: NotRequired[float]
    """Timeout of each try, seconds (0.001-3600; default: the service's `timeoutSeconds`, so a long inference is never cut and re-run). At most `timeoutSeconds`: the route timeout bounds all tries together. A shorter per-try timeout retries a slow try only if `retryOn` holds `5xx`, `gateway-error` or `reset` (Envoy counts an expired try as a reset), which runs the model again."""
    retry_on: NotRequired[str]
    """Envoy retry conditions, comma-separated (HTTP ones of `x-envoy-retry-on`, gRPC ones of `x-envoy-retry-grpc-on`, or HTTP status codes). The default retries only requests Triton never ran: `connect-failure` (no connection to the pod), `refused-stream` (HTTP/2 REFUSED_STREAM, sent before processing), `unavailable` (gRPC status 14, which Triton returns while it is not ready). `5xx`, `gateway-error`, `reset` and status codes also retry requests that reached Triton and may have run on a GPU. Default: `connect-failure,refused-stream,unavailable`."""


class MirrorArgs(TypedDict):
    """Arguments of `Mirror` (see the configuration reference, docs/reference.md)."""

    version: str
    """Version that receives a copy of live traffic (its responses are discarded)."""
    percent: NotRequired[float]
    """Share of requests copied. Default: `100.0`."""


class ModelRepositoryArgs(TypedDict):
    """Arguments of `ModelRepository` (see the configuration reference, docs/reference.md)."""

    cache: Literal["fileShare", "s3"]
    """Weight cache holding the model repository. One of: `fileShare`, `s3`."""
    path: str
    """Path inside the file share, or key prefix inside the bucket (relative, no `..`)."""


class GpuRequestArgs(TypedDict):
    """Arguments of `GpuRequest` (see the configuration reference, docs/reference.md)."""

    group: str
    """GPU node group the version runs on."""
    count: NotRequired[int]
    """GPUs (or GPU slices / shares) per replica. Default: `1`."""
    mig_profile: NotRequired[str]
    """MIG profile of the slice, for groups with MIG strategy `mixed` (e.g. `1g.10gb`)."""


class ResourcesArgs(TypedDict):
    """Arguments of `Resources` (see the configuration reference, docs/reference.md)."""

    cpu: NotRequired[str]
    """CPU request per replica. Default: `4`."""
    memory: NotRequired[str]
    """Memory request per replica. Default: `16Gi`."""
    cpu_limit: NotRequired[str]
    """CPU limit (default: no CPU limit, avoiding throttling); at least the request."""
    memory_limit: NotRequired[str]
    """Memory limit (default: the memory request); at least the request."""
    shm_size: NotRequired[str]
    """Size of the memory-backed /dev/shm. Default: `1Gi`."""


class ModelControlArgs(TypedDict):
    """Arguments of `ModelControl` (see the configuration reference, docs/reference.md)."""

    mode: NotRequired[Literal["none", "poll", "explicit"]]
    """Triton `--model-control-mode`: load all at start, poll the repository, or load only `load`. In every mode Triton's model-control API is closed to clients (only the service's admin key, in the Secret `<service>-triton-admin-key`, opens it). One of: `none`, `poll`, `explicit`. Default: `none`."""
    load: NotRequired[list[str]]
    """Models to load, mode `explicit` only (model directory names)."""
    poll_seconds: NotRequired[int]
    """Repository poll interval, mode `poll`. Default: `30`."""


class TuningConstraintsArgs(TypedDict):
    """Arguments of `TuningConstraints` (see the configuration reference, docs/reference.md)."""

    latency_p99_ms: NotRequired[float]
    """Latency budget: configurations whose p99 latency exceeds it (milliseconds) are not kept."""
    min_throughput: NotRequired[float]
    """Configurations below this throughput (inferences per second) are not kept."""
    max_gpu_memory_mb: NotRequired[int]
    """Configurations using more GPU memory (MB) are not kept. Not on a MIG group: Triton reports no GPU metrics there."""


class TuningSearchArgs(TypedDict):
    """Arguments of `TuningSearch` (see the configuration reference, docs/reference.md)."""

    max_instance_count: NotRequired[int]
    """Most model instances per GPU a configuration may have. Default: `5`."""
    max_batch_size: NotRequired[int]
    """Largest max_batch_size tried (powers of two from 1). Default: `128`."""
    max_concurrency: NotRequired[int]
    """Highest client concurrency Perf Analyzer drives. Default: `1024`."""


class LlmTuningArgs(TypedDict):
    """GenAI-Perf's concurrency sweep of a version with an LLM engine (docs/tuning.md: Tuning an LLM)."""

    tokenizer: str
    """Folder of the model's Hugging Face tokenizer files (tokenizer.json, tokenizer_config.json) in the version's weight cache, relative to it like modelRepository.path (and llm.openai.tokenizer), e.g. `llama/tokenizer`: GenAI-Perf writes prompts of the given lengths and counts output tokens with it (its `--tokenizer`). The run cannot reach the Hugging Face Hub."""
    concurrency: NotRequired[list[int]]
    """Requests in flight GenAI-Perf holds against the version's server, one measurement each, in increasing order (its `--concurrency`); each at most the version's `llm.maxConcurrentSequences`. The sweep stops at the first one that misses an objective. Default: `[1, 2, 4, 8, 16, 32]`."""
    input_tokens_mean: NotRequired[int]
    """Mean prompt length in tokens of the synthetic prompts (`--synthetic-input-tokens-mean`). Default: `512`."""
    input_tokens_stddev: NotRequired[int]
    """Standard deviation of the prompt length (`--synthetic-input-tokens-stddev`). Default: `0`."""
    output_tokens_mean: NotRequired[int]
    """Mean answer length in tokens GenAI-Perf asks for (`--output-tokens-mean`, with `--output-tokens-mean-deterministic`). Default: `256`."""
    output_tokens_stddev: NotRequired[int]
    """Standard deviation of the answer length (`--output-tokens-stddev`). Default: `0`."""
    measurement_interval_ms: NotRequired[int]
    """Length of each measurement window, ms (`--measurement-interval`). Default: `10000`."""


class TuningArgs(TypedDict):
    """Arguments of `Tuning` (see the configuration reference, docs/reference.md)."""

    objectives: NotRequired[dict[str, int]]
    """What to optimise, with relative weights 1-100: throughput, latencyP99, latencyP95, latencyAvg, gpuMemory, gpuUtilization (the last two not on a MIG group: Triton reports no GPU metrics there). One of: `throughput`, `latencyP99`, `latencyP95`, `latencyAvg`, `gpuMemory`, `gpuUtilization`. Default: `{'throughput': 10}`."""
    constraints: NotRequired[TuningConstraintsArgs]
    """Limits a kept configuration must meet."""
    search: NotRequired[TuningSearchArgs]
    """Bounds of Model Analyzer's search."""
    keep: NotRequired[int]
    """How many of the best configurations are written to the weight cache (`<model>/configs/tuned-<id>-<rank>.pbtxt`). Default: `3`."""
    model: str
    """Triton model to tune, by its name in the version's model repository."""
    llm: NotRequired[LlmTuningArgs]
    """For a version with an LLM engine (`llm` or `llmBackend`), and required there: GenAI-Perf's sweep of requests in flight against the service's `llmObjectives`, instead of Model Analyzer's search (docs/tuning.md: Tuning an LLM)."""
    shapes: NotRequired[dict[str, list[int]]]
    """The shape Perf Analyzer sends for each input with variable dims (-1) besides the batch dimension, e.g. `{input_ids: [128], attention_mask: [128]}`: the input's dims as its config lists them (without the batch dimension when max_batch_size > 0), Perf Analyzer's `--shape`. Required for every such input: Perf Analyzer cannot invent them."""
    input_data: NotRequired[Literal["random", "zero"]]
    """What Perf Analyzer puts in the inputs (its `--input-data`): random bytes or zeros. Token ids need `zero`: random bytes are ids outside any vocabulary. One of: `random`, `zero`. Default: `random`."""
    deadline_hours: NotRequired[float]
    """Longest a run may take; then its pod is stopped and the GPU released. Default: `6`."""
    run: NotRequired[int]
    """Run number: raise it to run again with unchanged settings (a run happens only when the tuning inputs change). Default: `1`."""
    sdk_image: NotRequired[str]
    """Model Analyzer's (or, for an LLM version, GenAI-Perf's) image (default: the Triton SDK image of the version's Triton release, `<release>-py3-sdk`, which ships both)."""


class ProvenanceArgs(TypedDict):
    """Where a version made by the model pipeline came from (its stack-file patch records it)."""

    workflow: str
    """The Argo workflow that built and tuned it (`argo get -n <namespace> <workflow>`)."""
    onnx: str
    """The trained model's ONNX file in the base version's weight cache, as the workflow was given it."""
    onnx_sha256: str
    """SHA-256 of that ONNX file as the workflow read it."""


class LlmArchitectureArgs(TypedDict):
    """The numbers of the model's `config.json` that its memory depends on."""

    parameters_billion: float
    """Parameters, in billions (e.g. 8.03 for Llama 3.1 8B)."""
    layers: int
    """Transformer layers (`num_hidden_layers`)."""
    kv_heads: int
    """Key/value attention heads (`num_key_value_heads`; equal to the attention heads without grouped-query attention)."""
    head_dim: int
    """Size of one attention head (`head_dim`, else `hidden_size / num_attention_heads`)."""
    attention_heads: NotRequired[int]
    """Query attention heads (`num_attention_heads`); required with tensorParallelSize above 1, which must divide it (both engines split the heads over the GPUs)."""
    vocab_size: NotRequired[int]
    """Tokens of the vocabulary (`vocab_size`); required with a quantised dtype, whose checkpoint keeps the token embeddings and lm_head in 16 bits."""
    hidden_size: NotRequired[int]
    """Width of the model (`hidden_size`); required with a quantised dtype, like vocabSize."""
    tie_word_embeddings: NotRequired[bool]
    """The lm_head is the token embeddings (`tie_word_embeddings`), counted once. Default: `false`."""


class LlmAutoscalingArgs(TypedDict):
    """The engine signals an LLM version's HPA scales on (docs/serving.md: LLM autoscaling)."""

    requests_in_flight_target: NotRequired[int]
    """Requests in the engine per replica the HPA aims at, at most maxConcurrentSequences (default: 80% of it): TensorRT-LLM's active requests, vLLM's requests in flight."""
    kv_cache_use_target: NotRequired[float]
    """Share of the KV cache in use per replica the HPA aims at (TensorRT-LLM only: the vLLM backend exports no KV-cache gauge). Default: `0.8`."""


class LlmOpenAiArgs(TypedDict):
    """Serve the version through Triton's OpenAI-compatible frontend (docs/serving.md: OpenAI-compatible endpoints)."""

    tokenizer: NotRequired[str]
    """Folder of the model's Hugging Face tokenizer files (with the chat template in tokenizer_config.json), relative to the file share like modelRepository.path: the frontend's `--tokenizer`. Without it /v1/chat/completions has no chat template and fails; /v1/completions works."""


class LlmArgs(TypedDict):
    """Arguments of `Llm` (see the configuration reference, docs/reference.md)."""

    engine: Literal["vllm", "tensorrtllm"]
    """The Triton backend that runs the model: `vllm` or `tensorrtllm`; sets the version's `llmBackend`. One of: `vllm`, `tensorrtllm`."""
    architecture: LlmArchitectureArgs
    """What the model's memory depends on, from its `config.json`."""
    max_context_tokens: int
    """Longest sequence (prompt and answer, in tokens) the engine accepts."""
    max_concurrent_sequences: NotRequired[int]
    """Sequences the engine serves at once, each with its KV cache for the whole context. Default: `64`."""
    dtype: NotRequired[Literal["float32", "bfloat16", "float16", "fp8", "int8", "int4"]]
    """Data type of the weights as loaded (`int4`/`int8`/`fp8` for quantised checkpoints). One of: `float32`, `bfloat16`, `float16`, `fp8`, `int8`, `int4`. Default: `bfloat16`."""
    kv_cache_dtype: NotRequired[Literal["auto", "float32", "bfloat16", "float16", "fp8"]]
    """Data type of the KV cache; `auto` uses the weights' type (`float16` for quantised weights). vLLM takes `auto` and `fp8` only; for TensorRT-LLM, the KV cache the engine was built with. One of: `auto`, `float32`, `bfloat16`, `float16`, `fp8`. Default: `auto`."""
    tensor_parallel_size: NotRequired[int]
    """GPUs one replica spreads the model over, all on one node; equals the version's `gpu.count`. Default: `1`."""
    memory_utilization: NotRequired[float]
    """vLLM `gpu_memory_utilization`: the share of the whole GPU's memory the engine may use, weights included (at most 1/replicas on a GPU shared by time-slicing or MPS); TensorRT-LLM `kv_cache_free_gpu_mem_fraction`: the share of the memory free once the engine is loaded that its KV cache takes. Both default 0.9. Default: `0.9`."""
    overhead_gib: NotRequired[float]
    """GPU memory per GPU besides weights and KV cache, GiB: CUDA context, activations, CUDA graphs (an estimate; measure yours). Default: `2`."""
    autoscaling: NotRequired[LlmAutoscalingArgs]
    """Targets of the engine signals the version's HPA scales on (with the service's or version's autoscaling enabled)."""
    openai: NotRequired[LlmOpenAiArgs]
    """Run the version's Triton inside the OpenAI-compatible frontend (`/v1/chat/completions`, `/v1/completions`, `/v1/models`, streaming) beside the KServe HTTP and gRPC endpoints; left out, the version runs `tritonserver` as classic versions do."""


class VersionArgs(TypedDict):
    """Arguments of `Version` (see the configuration reference, docs/reference.md)."""

    name: str
    """Version name (DNS label): the pods' `version` label and the Istio subset."""
    image: str
    """Triton container image, with a pinned tag or digest."""
    weight: int
    """Percent of the service's traffic (weights of a service sum to 100; 0 keeps the version deployed without traffic)."""
    model_repository: ModelRepositoryArgs
    """Where the version's model repository lives."""
    gpu: GpuRequestArgs
    """GPU placement and share of each replica."""
    resources: NotRequired[ResourcesArgs]
    """CPU, memory and /dev/shm of each replica."""
    model_control: NotRequired[ModelControlArgs]
    """Triton model control."""
    model_load_seconds: NotRequired[int]
    """Expected model load time; the startup probe allows at least this. Default: `420`."""
    startup_budget_seconds: NotRequired[int]
    """How long the startup probe waits for readiness before restarting the pod. Default: `900`."""
    server_args: NotRequired[dict[str, Any]]
    """Extra Triton server flags without the leading `--`, e.g. `{log-verbose: "1"}`; only flags the platform does not set itself are allowed (see TRITON_SERVER_FLAGS), each value in that flag's grammar (integer, true/false, a choice, or one printable token). Flags Triton accepts several times (backend-config, metrics-config, cache-config, trace-config, rate-limit-resource, host-policy, model-load-gpu-limit, cuda-memory-pool-byte-size) take a list, rendered as one `--flag=value` per item in order. `exit-timeout-secs` may only raise the platform's value, the service's timeoutSeconds (docs/serving.md: Graceful shutdown)."""
    model_config_name: NotRequired[str]
    """Tuned config variant, Triton's `--model-config-name` (from the model's `configs/` folder)."""
    replicas: NotRequired[int]
    """Fixed replica count, used only when autoscaling is disabled. Default: `1`."""
    autoscaling: NotRequired[AutoscalingArgs]
    """Autoscaling of this version (default: the service's)."""
    tuning: NotRequired[TuningArgs]
    """Tune this version's model: a Job on the version's GPU group and share. Model Analyzer writes the best configurations to the weight cache; for a version with an LLM engine, GenAI-Perf finds the most requests in flight that meet the service's llmObjectives (`tuning.llm`; docs/tuning.md)."""
    provenance: NotRequired[ProvenanceArgs]
    """Set by the model pipeline's patch: the workflow and the ONNX file (path and SHA-256) the version was built from, recorded as annotations on its Deployment."""
    llm_backend: NotRequired[Literal["tensorrtllm", "vllm"]]
    """LLM backend the version's models run on (`tensorrtllm`, `vllm`): its LLM dashboard panels are shown, and the GPU memory alert skips its pods, since both engines reserve most GPU memory for their KV cache by design. One of: `tensorrtllm`, `vllm`."""
    llm: NotRequired[LlmArgs]
    """The large language model the version serves: engine, architecture, context, concurrency, data types and tensor parallelism; the plan checks that it fits the version's GPU share (docs/serving.md: LLM memory fit)."""


class LlmObjectivesArgs(TypedDict):
    """Latency objectives of an LLM service, with burn-rate alerts (docs/serving.md: LLM objectives)."""

    time_to_first_token_ms: NotRequired[float]
    """Time to first token, ms: `target` of the requests get their first token within it. One of the engine histogram's bounds (docs/serving.md: LLM objectives)."""
    inter_token_latency_ms: NotRequired[float]
    """Time between two output tokens, ms (vLLM only: TensorRT-LLM exports no such metric at the pinned release); one of the histogram's bounds."""
    target: NotRequired[float]
    """Share of requests within each objective over 30 days; 1 - target is the error budget the alerts watch burn. Default: `0.99`."""


class LlmRoutingArgs(TypedDict):
    """How an LLM service's requests reach its versions: a Gateway API Gateway and HTTPRoute, an
    InferencePool and the llm-d router's endpoint picker per version (docs/serving.md: LLM routing)."""

    failure_mode: NotRequired[Literal["FailOpen", "FailClose"]]
    """What the gateway does when a version's endpoint picker does not answer (InferencePool `endpointPickerRef.failureMode`): `FailOpen` routes the request to any ready pod of the pool, `FailClose` refuses it. One of: `FailOpen`, `FailClose`. Default: `FailOpen`."""


class TuningGoalsArgs(TypedDict):
    """Arguments of `TuningGoals` (see the configuration reference, docs/reference.md)."""

    objectives: NotRequired[dict[str, int]]
    """What to optimise, with relative weights 1-100: throughput, latencyP99, latencyP95, latencyAvg, gpuMemory, gpuUtilization (the last two not on a MIG group: Triton reports no GPU metrics there). One of: `throughput`, `latencyP99`, `latencyP95`, `latencyAvg`, `gpuMemory`, `gpuUtilization`. Default: `{'throughput': 10}`."""
    constraints: NotRequired[TuningConstraintsArgs]
    """Limits a kept configuration must meet."""
    search: NotRequired[TuningSearchArgs]
    """Bounds of Model Analyzer's search."""
    keep: NotRequired[int]
    """How many of the best configurations are written to the weight cache (`<model>/configs/tuned-<id>-<rank>.pbtxt`). Default: `3`."""


class ServicePipelineArgs(TypedDict):
    """Arguments of `ServicePipeline` (see the configuration reference, docs/reference.md)."""

    base_version: str
    """The version a new one is built for and copies: its Triton release (image), GPU group and share, weight cache."""
    model: str
    """Triton model name of the built engine in the new version's repository."""
    inputs: dict[str, list[int]]
    """The ONNX model's inputs and their dims without the batch dimension, e.g. `{input: [3, 224, 224]}` (the engine's optimisation profile)."""
    max_batch_size: NotRequired[int]
    """Largest batch the engine is built for. Default: `8`."""
    precision: NotRequired[Literal["fp16", "fp32"]]
    """TensorRT precision: fp16 (trtexec --fp16) or fp32. One of: `fp16`, `fp32`. Default: `fp16`."""
    repository_prefix: str
    """Where new versions are published in the base version's weight cache: `<prefix>/<version>/<model>/...`."""
    canary_weight: NotRequired[int]
    """Traffic percent the produced stack-file patch gives the new version (taken from the base version). Default: `10`."""
    tuning: NotRequired[TuningGoalsArgs]
    """Model Analyzer objectives, constraints and search of the pipeline's analyse step."""


class ServiceArgs(TypedDict):
    """Arguments of `Service` (see the configuration reference, docs/reference.md)."""

    name: str
    """Service name (DNS label): the Kubernetes Service and, by default, the namespace."""
    namespace: NotRequired[str]
    """Namespace (default: the service name); services may share one. Not a system namespace (`default`, `kube-*`) nor one the platform creates (docs/reference.md: Reserved namespaces)."""
    hosts: list[str]
    """Host names served through the customer Gateway (no wildcards)."""
    auth: NotRequired[AuthSettingsArgs]
    """Client authentication at the mesh."""
    autoscaling: NotRequired[AutoscalingArgs]
    """Autoscaling of every version (a version may override)."""
    timeout_seconds: NotRequired[float]
    """Request timeout at the mesh, seconds (0.001-3600): the longest a request may take, all retries included. Triton's exit timeout and the pods' termination grace period follow it, so a rollout or scale-down lets requests of this length finish. Default: `60`."""
    retries: NotRequired[RetriesArgs]
    """Retries at the mesh (docs/serving.md: Timeouts and retries)."""
    mirror: NotRequired[MirrorArgs]
    """Copy a share of live traffic to a shadow version."""
    versions: list[VersionArgs]
    """Deployed versions; weights sum to 100."""
    llm_objectives: NotRequired[LlmObjectivesArgs]
    """Latency objectives of the service's LLM versions (those with `llm`), each with multi-window burn-rate alerts."""
    llm_routing: NotRequired[LlmRoutingArgs]
    """Routing of an LLM service (one whose versions have `llm.openai`): the endpoint pickers' failure mode (docs/serving.md: LLM routing)."""
    pipeline: NotRequired[ServicePipelineArgs]
    """The model pipeline (needs modelPipeline.enabled): an Argo WorkflowTemplate that builds, tunes and publishes a new version of this service's model and ends in a stack-file patch for it as a canary."""


class GraphTensorArgs(TypedDict):
    """Arguments of `GraphTensor` (see the configuration reference, docs/reference.md)."""

    name: str
    """Tensor name, as the graph's callers send or receive it."""
    data_type: NotRequired[Literal["TYPE_BOOL", "TYPE_UINT8", "TYPE_UINT16", "TYPE_UINT32", "TYPE_UINT64", "TYPE_INT8", "TYPE_INT16", "TYPE_INT32", "TYPE_INT64", "TYPE_FP16", "TYPE_FP32", "TYPE_FP64", "TYPE_STRING", "TYPE_BF16"]]
    """Triton data type (`TYPE_FP32`, `TYPE_STRING`, ...). One of: `TYPE_BOOL`, `TYPE_UINT8`, `TYPE_UINT16`, `TYPE_UINT32`, `TYPE_UINT64`, `TYPE_INT8`, `TYPE_INT16`, `TYPE_INT32`, `TYPE_INT64`, `TYPE_FP16`, `TYPE_FP32`, `TYPE_FP64`, `TYPE_STRING`, `TYPE_BF16`. Default: `TYPE_FP32`."""
    dims: list[int]
    """Shape without the batch dimension; -1 for a variable size."""


class ReplicaRangeArgs(TypedDict):
    """Arguments of `ReplicaRange` (see the configuration reference, docs/reference.md)."""

    min: NotRequired[int]
    """Fewest replicas (each holds the step's GPU share). Default: `1`."""
    max: NotRequired[int]
    """Most replicas the step scales to. Default: `1`."""


class GraphStepArgs(TypedDict):
    """Arguments of `GraphStep` (see the configuration reference, docs/reference.md)."""

    name: str
    """Step name (DNS label): names its Ray worker group and Serve deployment."""
    model: str
    """The Triton model this step runs, as named in its model repository."""
    image: str
    """Triton image holding the model's backend (with `placement: ray`, also Ray at the pinned version)."""
    model_repository: ModelRepositoryArgs
    """Where the model repository holding `model` is in a weight cache."""
    gpu: GpuRequestArgs
    """GPU group and share each replica uses."""
    replicas: NotRequired[ReplicaRangeArgs]
    """Replica range. With `placement: ray`, the step's Serve autoscaling range: a change reaches the running cluster in place (its worker group's bounds stay 0 to 100, each worker holding one replica)."""
    model_config_name: NotRequired[str]
    """Tuned config variant, Triton's `--model-config-name`: `configs/<name>.pbtxt` in each model's directory, else its `config.pbtxt` (the same for every step of an ensemble). `placement: ensemble` only: Triton's in-process Python API, which runs a step under Ray, has no such option."""
    max_ongoing_requests: NotRequired[int]
    """With `placement: ray`: requests one replica of the step holds at once (Serve's `max_ongoing_requests`; Ray's own default, 5, leaves Triton's dynamic batcher little to batch). Serve still scales replicas at 2 requests in flight each; further requests wait in Serve's queue. Not allowed with `placement: ensemble`, where Triton's own queue takes every request. Default: `32`."""
    resources: NotRequired[ResourcesArgs]
    """CPU and memory of each replica. With `placement: ray`, Ray's object store takes 80% of `shmSize` (at least 75Mi, Ray's minimum), and `shmSize` must fit in the memory limit."""
    inputs: dict[str, str]
    """Model input tensor -> graph tensor it reads: a graph input or an earlier step's output."""
    outputs: dict[str, str]
    """Model output tensor -> graph tensor it becomes, for later steps and the graph's outputs."""


class GraphArgs(TypedDict):
    """Arguments of `Graph` (see the configuration reference, docs/reference.md)."""

    name: str
    """Graph name (DNS label): names its Kubernetes objects, and the ensemble model with `placement: ensemble`."""
    namespace: NotRequired[str]
    """Namespace (default: the graph's name)."""
    hosts: list[str]
    """Hostnames the graph is served on."""
    auth: NotRequired[AuthSettingsArgs]
    """Authentication at the mesh, as for services."""
    placement: NotRequired[Literal["ensemble", "ray"]]
    """`ensemble`: one Triton server runs every step on one GPU share; `ray`: one Ray worker group per step, across nodes. One of: `ensemble`, `ray`. Default: `ensemble`."""
    timeout_seconds: NotRequired[float]
    """Route timeout of one request through the whole graph. Default: `60`."""
    inputs: list[GraphTensorArgs]
    """Tensors a caller sends."""
    outputs: list[GraphTensorArgs]
    """Tensors the graph returns (each one a step's output)."""
    steps: list[GraphStepArgs]
    """The steps in order; each reads graph inputs or earlier steps' outputs."""


class BatchingPresetArgs(TypedDict):
    """Arguments of `BatchingPreset` (see the configuration reference, docs/reference.md)."""

    max_batch_size: NotRequired[int]
    """The model's max_batch_size in the variant (default: the model's own; dynamic batching of a model whose own is 0 needs one here)."""
    dynamic_batching: NotRequired[bool]
    """Let Triton combine requests into batches. Default: `true`."""
    max_queue_delay_microseconds: NotRequired[int]
    """How long a request may wait for others to fill a batch. Default: `0`."""
    preferred_batch_sizes: NotRequired[list[int]]
    """Batch sizes the batcher aims for (empty: the largest possible)."""
    instance_count: NotRequired[int]
    """Model instances (execution copies) per GPU. Default: `1`."""
    instance_kind: NotRequired[Literal["gpu", "cpu"]]
    """Where the instances run. One of: `gpu`, `cpu`. Default: `gpu`."""


class PipelineSubmitterArgs(TypedDict):
    """Who may run a service's pipeline: a RoleBinding subject (rbac.authorization.k8s.io/v1 Subject)."""

    kind: Literal["User", "Group", "ServiceAccount"]
    """Subject kind, as the cluster's authenticator names people and groups (OIDC claims, certificates) or a ServiceAccount of CI. One of: `User`, `Group`, `ServiceAccount`."""
    name: str
    """User, group or ServiceAccount name."""
    namespace: NotRequired[str]
    """The ServiceAccount's namespace (kind ServiceAccount only, required there)."""


class ModelPipelineSettingsArgs(TypedDict):
    """Arguments of `ModelPipelineSettings` (see the configuration reference, docs/reference.md)."""

    enabled: NotRequired[bool]
    """Install Argo Workflows (controller only) and a WorkflowTemplate per service with `pipeline` (docs/tuning.md). Default: `false`."""
    submitters: NotRequired[list[PipelineSubmitterArgs]]
    """People, groups or CI service accounts bound, in each namespace with a pipeline, to the Role `<service>-pipeline-submit`: get that service's WorkflowTemplate and create, get, list and watch Workflows (`argo submit --from workflowtemplate/... --wait`, `argo get`); nothing else."""


class TeamQuotaArgs(TypedDict):
    """Arguments of `TeamQuota` (see the configuration reference, docs/reference.md)."""

    group: str
    """GPU node group the quota is on."""
    mig_profile: NotRequired[str]
    """MIG slice the quota counts, for groups with MIG strategy `mixed` (e.g. `1g.10gb`); one quota per slice."""
    gpus: int
    """Guaranteed units of the group's GPU resource (whole GPUs, time-slicing or MPS shares, or MIG slices): the team's `nominalQuota`, always free for it because the serving-first proof keeps serving's peak apart."""
    borrowing_limit: NotRequired[int]
    """Most units the team may borrow beyond `gpus` (default: everything training may use on the group beyond its own guarantee)."""
    lending_limit: NotRequired[int]
    """Most of its idle guarantee the team lends to other teams, which it reclaims by preemption (default: all of it)."""


class TeamPreemptionArgs(TypedDict):
    """Kueue ClusterQueue `spec.preemption` (kueue 0.19.2 v1beta2)."""

    within_cluster_queue: NotRequired[Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"]]
    """Whether a pending job of the team preempts the team's own admitted jobs of lower priority (`training-urgent` over `training`). One of: `Never`, `LowerPriority`, `LowerOrNewerEqualPriority`. Default: `LowerPriority`."""
    reclaim_within_cohort: NotRequired[Literal["Never", "LowerPriority", "Any"]]
    """Whether the team takes back its lent guarantee by preempting other teams' borrowing jobs (`Any`: whatever their priority). One of: `Never`, `LowerPriority`, `Any`. Default: `Any`."""


class TrainingTeamArgs(TypedDict):
    """Arguments of `TrainingTeam` (see the configuration reference, docs/reference.md)."""

    name: str
    """Team name (DNS label): its ClusterQueue `training-<name>` and its LocalQueue `<name>`."""
    namespace: str
    """Namespace of the team's jobs, created by the platform, where its LocalQueue is; one team per namespace."""
    quotas: NotRequired[list[TeamQuotaArgs]]
    """Guaranteed GPUs per GPU group (a group left out: nothing guaranteed, borrowing only)."""
    preemption: NotRequired[TeamPreemptionArgs]
    """How the team's queue preempts."""


class DataLoaderArgs(TypedDict):
    """Arguments of `DataLoader` (see the configuration reference, docs/reference.md)."""

    image: str
    """Image of the CPU data-loader pods (they pre-process and feed the GPU nodes)."""
    command: list[str]
    """Entry point of the data-loader container."""
    replicas: NotRequired[int]
    """Data-loader pods per TrainJob. Default: `1`."""
    cpu: NotRequired[str]
    """CPU request (and limit) of each data-loader pod. Default: `4`."""
    memory: NotRequired[str]
    """Memory request (and limit) of each data-loader pod. Default: `16Gi`."""


class TrainingRuntimeSettingsArgs(TypedDict):
    """Arguments of `TrainingRuntimeSettings` (see the configuration reference, docs/reference.md)."""

    kind: Literal["torch-ddp", "torch-fsdp", "torch-fsdp-tp", "lightning"]
    """Strategy: `torch-ddp`, `torch-fsdp` (full or hybrid shard), `torch-fsdp-tp` (2-D mesh: shard x tensor parallel) or `lightning`; the ClusterTrainingRuntime is `ip-<kind>`. One of: `torch-ddp`, `torch-fsdp`, `torch-fsdp-tp`, `lightning`."""
    shm_size: NotRequired[str]
    """Size of the memory-backed /dev/shm of each node pod (PyTorch DataLoader workers and NCCL's shared-memory transport use it); counted against the pod's memory. Default: `8Gi`."""
    run_as_user: NotRequired[int]
    """UID the node containers run as (the namespace enforces Pod Security `restricted`: never root). Default: `1000`."""
    initializer_volume: NotRequired[str]
    """Size of the ReadWriteMany claim a job's Trainer initializers download an S3 dataset or model into (one per job, deleted with it); the cluster's default StorageClass must offer ReadWriteMany. Default: `100Gi`."""
    data_loader: NotRequired[DataLoaderArgs]
    """A CPU replicated job `data-loader` beside the GPU `node` job, on CPU nodes (the system group)."""
    max_restarts: NotRequired[int]
    """Restarts of a job's JobSet after a failure (a rank's crash, a failed initializer), every pod again, before the job fails for good; a node pod disrupted by the scheduler's preemption for serving or a node's drain restarts it without counting (docs/training.md: When a job is preempted). Default: `3`."""


class CachePathArgs(TypedDict):
    """Arguments of `CachePath` (see the configuration reference, docs/reference.md)."""

    cache: Literal["fileShare", "s3"]
    """Weight cache holding it: `s3` (read by Trainer's initializer, s3://<bucket>/<path>) or `fileShare` (the team namespace's claim, mounted). One of: `fileShare`, `s3`."""
    path: str
    """Path inside the file share, or key prefix inside the bucket."""


class PublishToArgs(TypedDict):
    """Arguments of `PublishTo` (see the configuration reference, docs/reference.md)."""

    service: str
    """The service (`services[].name`, with a `pipeline`) whose model pipeline builds, tunes and publishes the trained model as a new canary version."""
    version: NotRequired[str]
    """Name of the new version (a DNS label of at most 20 characters the service does not use); default: the job's name."""
    onnx: NotRequired[str]
    """The ONNX file the job exports, relative to its checkpoint directory (`$PLATFORM_CHECKPOINT_DIR/<onnx>`): the pipeline's `onnx` argument is `<checkpoint.path>/<onnx>` on the file share. Default: `model.onnx`."""


class TrainJobSettingsArgs(TypedDict):
    """Arguments of `TrainJobSettings` (see the configuration reference, docs/reference.md)."""

    name: str
    """TrainJob name (DNS label, at most 40: Trainer names the pods `<name>-node-<i>-<j>` and the rendezvous host `<name>-node-0-0.<name>`)."""
    team: str
    """The team (`training.teams[].name`) whose namespace and Kueue LocalQueue the job uses."""
    runtime: Literal["torch-ddp", "torch-fsdp", "torch-fsdp-tp", "lightning"]
    """Runtime kind (`training.runtimes[].kind`). One of: `torch-ddp`, `torch-fsdp`, `torch-fsdp-tp`, `lightning`."""
    image: str
    """Training image (PyTorch, with torchrun; Lightning for `lightning`)."""
    command: list[str]
    """Entry point of the node container, e.g. `[torchrun, train.py]`: torchrun takes its rendezvous from Trainer's PET_* variables, so give it no --nnodes/--nproc-per-node/--master-addr."""
    env: NotRequired[dict[str, str]]
    """Extra environment of the node container; PET_* and PLATFORM_* are refused (Trainer and the platform set them)."""
    secret_env: NotRequired[dict[str, str]]
    """Environment of the node container from the stack's secrets: variable name -> a name of `trainingSecrets`. The value reaches the pods only through a Secret of the job's namespace (`valueFrom.secretKeyRef`), never in the TrainJob's spec (docs/training.md: Secrets in a job's environment); a `secure:` value in `env` is refused."""
    nodes: NotRequired[int]
    """Training nodes (pods of the `node` job), one per GPU node at most. Default: `1`."""
    processes_per_node: NotRequired[int]
    """torchrun processes per node (PET_NPROC_PER_NODE); default and most: the GPUs of `gpu.count`, one per GPU."""
    gpu: GpuRequestArgs
    """GPU group (`cluster.nodeGroups[].name`) and share per node: whole GPUs (`count`), or a MIG slice (`migProfile`) on a group with MIG strategy `mixed`."""
    cpu: NotRequired[str]
    """CPU request per node pod. Default: `8`."""
    memory: NotRequired[str]
    """Memory request (and limit) per node pod, /dev/shm included. Default: `64Gi`."""
    hybrid_shard_degree: NotRequired[int]
    """FSDP only: ranks in one shard group (PLATFORM_SHARD_DEGREE; the replicate dimension is the rest). Absent: full shard over all ranks. Must divide nodes x processesPerNode (divided by tensorParallelDegree with `torch-fsdp-tp`)."""
    tensor_parallel_degree: NotRequired[int]
    """`torch-fsdp-tp` only, required: ranks in one tensor-parallel group (PLATFORM_TP_DEGREE), within a node: divides processesPerNode."""
    code: NotRequired[CachePathArgs]
    """The job's code: a directory of the file share, mounted read-only at /workspace/code in the node pods (cache `fileShare` only), e.g. `{cache: fileShare, path: code/resnet}` with `command: [torchrun, /workspace/code/train.py]`. Copy the code there before the job starts (docs/training.md: The job's code); a command naming /workspace/code needs it."""
    dataset: NotRequired[CachePathArgs]
    """Dataset in a weight cache, at /workspace/dataset in the node pods."""
    model: NotRequired[CachePathArgs]
    """Pre-trained model in a weight cache, at /workspace/model in the node pods."""
    checkpoint: NotRequired[CachePathArgs]
    """Where the job writes its checkpoints (PLATFORM_CHECKPOINT_DIR): a directory of the file share's claim (cache `fileShare` only: the node pods mount it read-write)."""
    active_deadline_seconds: NotRequired[int]
    """Seconds the job may run (from its start, reset on resume) before Trainer fails it."""
    restart_on_edit: NotRequired[bool]
    """Accept, in a production stack, edits that kill this job while it runs: one that replaces its TrainJob (its own keys, its group's `networks`, selector and taints, its claim) or one of its runtime's containers, which makes Kueue evict it; the job starts again, from its last checkpoint if its code reads one. Without it `platformctl diff` refuses such an edit of a production stack (docs/training.md: Edits that restart a job); other stacks get a note. Default: `false`."""
    priority: NotRequired[Literal["training", "training-urgent"]]
    """Kueue WorkloadPriorityClass of the job (label `kueue.x-k8s.io/priority-class`): the order of the team's pending jobs, and with the team's `preemption.withinClusterQueue: LowerPriority` a `training-urgent` job preempts the team's own `training` jobs. Every job gets one, so no job outranks the others by accident. One of: `training`, `training-urgent`. Default: `training`."""
    suspend: NotRequired[bool]
    """Refused when true: under Kueue it holds nothing (Kueue lifts `suspend` from every job it admits) and setting it on a running job deletes its pods, which restart from the beginning once Kueue lifts it. To hold a job, leave it out of `training.jobs` until it should run (docs/training.md: Holding a job). Kept so that `false` parses. Default: `false`."""
    publish_to: NotRequired[PublishToArgs]
    """When the job's nodes complete, start the model pipeline of this service (export -> TensorRT -> analyse -> publish -> canary patch) with the ONNX file the job wrote in its checkpoint directory (docs/training.md: From a trained model to a canary). Needs `checkpoint`; adding, removing or changing `service` replaces the TrainJob."""


class GroupNetworkArgs(TypedDict):
    """Arguments of `GroupNetwork` (see the configuration reference, docs/reference.md)."""

    socket_ifname: NotRequired[str]
    """NCCL_SOCKET_IFNAME on the group's training pods: the interfaces NCCL's socket transport and bootstrap use, as prefixes (`eth`), exact names (`=eth0`) or exclusions (`^lo,docker`). The pods have `lo` and `eth0` only (the platform attaches no secondary network), so the list must select `eth0` and not `lo`; default: NCCL's own choice, which is `eth0`."""
    ib_disable: NotRequired[bool]
    """NCCL_IB_DISABLE=1: NCCL does not look for InfiniBand/RoCE devices (training pods have none). Default: `false`."""
    ib_hca: NotRequired[str]
    """NCCL_IB_HCA: refused. It names RDMA devices, and the platform gives training pods none (no secondary network, no RDMA device resource, no IPC_LOCK under Pod Security restricted): NCCL runs over the pod network (docs/training.md: NCCL's network)."""


class TrainingSettingsArgs(TypedDict):
    """Arguments of `TrainingSettings` (see the configuration reference, docs/reference.md)."""

    teams: NotRequired[list[TrainingTeamArgs]]
    """Teams that train on the GPU groups: their namespaces, Kueue queues and guaranteed GPUs."""
    runtimes: NotRequired[list[TrainingRuntimeSettingsArgs]]
    """ClusterTrainingRuntimes, one per kind (default: the four kinds with default settings). Default: `[TrainingRuntimeSettings(kind='torch-ddp', shm_size='8Gi', run_as_user=1000, initializer_volume='100Gi', data_loader=None, max_restarts=3), TrainingRuntimeSettings(kind='torch-fsdp', shm_size='8Gi', run_as_user=1000, initializer_volume='100Gi', data_loader=None, max_restarts=3), TrainingRuntimeSettings(kind='torch-fsdp-tp', shm_size='8Gi', run_as_user=1000, initializer_volume='100Gi', data_loader=None, max_restarts=3), TrainingRuntimeSettings(kind='lightning', shm_size='8Gi', run_as_user=1000, initializer_volume='100Gi', data_loader=None, max_restarts=3)]`."""
    jobs: NotRequired[list[TrainJobSettingsArgs]]
    """TrainJobs, each of a team, on a runtime and a GPU group."""
    networks: NotRequired[dict[str, GroupNetworkArgs]]
    """Per GPU group (`cluster.nodeGroups[].name`), the NCCL settings of its nodes' network, set on every TrainJob placed there."""
    topology_levels: NotRequired[list[str]]
    """Node labels of the cluster's network topology, widest first (e.g. `topology.kubernetes.io/zone`, then `kubernetes.io/hostname`): every GPU group's flavor becomes topology-aware, and Kueue admits a job only onto GPU nodes that exist, are ready and carry every level's label. Refused while a GPU group autoscales (minNodes < maxNodes): nothing asks the autoscaler for nodes then (docs/training-quotas.md). Empty (default): quota-only admission."""


class PolicySettingsArgs(TypedDict):
    """Arguments of `PolicySettings` (see the configuration reference, docs/reference.md)."""

    enforcement: NotRequired[dict[str, Literal["mandatory", "advisory", "disabled"]]]
    """Per-policy enforcement override for this stack, e.g. `{triton-probes: advisory}`; names as in the policy list of docs/policies.md. One of: `mandatory`, `advisory`, `disabled`."""


class InferencePlatformArgs(TypedDict):
    """Arguments of `Settings` (see the configuration reference, docs/reference.md)."""

    customer: str
    """Customer name (DNS label). A stack whose name has a '-' must be named `<customer>-<environment>`, or that and a `-<suffix>` (docs/stack-files.md: The stack's name)."""
    environment: str
    """Environment name (DNS label), e.g. dev or prod."""
    production: NotRequired[bool]
    """Production stack: stateful resources protected and retained, auth `none` and anonymous Kiali refused. An environment named prod, production or prd (bare or with a `-<suffix>`) must be production unless nonProductionReason says why not. Default: `false`."""
    non_production_reason: NotRequired[str]
    """Why a stack whose environment is named prod, production or prd (bare or with a `-<suffix>`) is not production (`production: false`), e.g. "load-test copy, no customer data"; refused with production: true. Absent: such an environment must set production: true."""
    cluster: ClusterSettingsArgs
    """The Kubernetes cluster and its node groups."""
    gpu_operator: NotRequired[GpuOperatorSettingsArgs]
    """NVIDIA GPU operator."""
    cold_start: NotRequired[ColdStartSettingsArgs]
    """Fast scale-out: spare GPU capacity and image pre-pull."""
    mesh: NotRequired[MeshSettingsArgs]
    """Istio, Jaeger and Kiali."""
    observability: NotRequired[ObservabilitySettingsArgs]
    """Prometheus, prometheus-adapter, Loki, Alloy and Grafana."""
    ui: NotRequired[UiSettingsArgs]
    """Hosts on which Grafana and Kiali reach their users through the ingress gateway (docs/observability.md: Reaching the UIs)."""
    weight_caches: NotRequired[WeightCacheSettingsArgs]
    """Caches of model weights."""
    services: NotRequired[list[ServiceArgs]]
    """Triton inference services."""
    graphs: NotRequired[list[GraphArgs]]
    """Inference graphs: chains of Triton models (docs/graphs.md)."""
    tuning_presets: NotRequired[dict[str, BatchingPresetArgs]]
    """Batching and instance-group presets by name, beside the built-in `latency` and `throughput` (a name given here replaces the built-in one); weight uploads render them into config variants (docs/tuning.md)."""
    model_pipeline: NotRequired[ModelPipelineSettingsArgs]
    """Argo Workflows for the model pipeline (docs/tuning.md)."""
    training: NotRequired[TrainingSettingsArgs]
    """Training on the GPU groups beside serving: Kubeflow Trainer, its runtimes and the teams' TrainJobs, Kueue queues per team proven to leave serving its peak (docs/training.md, docs/training-quotas.md); absent: nothing of it is installed."""
    policies: NotRequired[PolicySettingsArgs]
    """Policy pack settings of this stack (`python -m platformctl policy-config` passes them to `pulumi preview --policy-pack`)."""
    chart_directory: NotRequired[str]
    """Local directory of Helm charts, `<chart>/<version>/` for every pinned chart, used instead of the charts' repositories (air-gapped installs; docs/operations.md: Charts from a local directory). The environment variable INFERENCE_PLATFORM_CHART_DIR overrides it. Absent: the repositories."""
    kubeconfig: NotRequired[str]
    """Secret. kubeconfig of an existing cluster (set with `pulumi config set --secret kubeconfig "$(cat kubeconfig)"`)."""
    s3_access_key_id: NotRequired[str]
    """Secret. Access key of the S3 weight cache."""
    s3_secret_access_key: NotRequired[str]
    """Secret. Secret key of the S3 weight cache."""
    grafana_oidc_client_secret: NotRequired[str]
    """Secret. Grafana's OIDC client secret, for `ui.grafana.auth: oidc`."""
    alert_receiver_secrets: NotRequired[dict[str, str]]
    """Secret. Per alert receiver (`observability.alerting.receivers[].name`), its credential: the webhook URL, Slack webhook URL, SMTP password or PagerDuty routing key (`pulumi config set --secret --path 'alertReceiverSecrets.<name>' ...`)."""
    training_secrets: NotRequired[dict[str, str]]
    """Secret. Values training jobs read from their environment, by name (`pulumi config set --secret --path 'trainingSecrets.<name>' ...`): a job's `secretEnv` names them, and the platform puts each in a Secret of the job's namespace that the TrainJob refers to (docs/training.md: Secrets in a job's environment)."""


class ClusterArgs(TypedDict):
    """A Magnum cluster with its node groups, or an existing cluster, and the Kubernetes provider for it."""

    cluster: ClusterSettingsArgs
    """The cluster and its node groups (the stack file's `cluster`)."""
    production: NotRequired[bool]
    """Protect the Magnum cluster and its node groups from deletion. Default: `false`."""
    kubeconfig: NotRequired[str]
    """Secret. kubeconfig of an existing cluster (mode `existing`); without it, the ambient kubeconfig."""
    gpu_node_ready_seconds: NotRequired[int]
    """Seconds from a new VM to a GPU node that advertises its GPUs (boot, then the driver): how long the autoscaler waits for a node it asked for. Default: `300`."""
    upgrade_seconds: NotRequired[int]
    """Seconds a move of the Magnum cluster to a new template may take (every node replaced in turn; timing/readiness.py cluster_upgrade_budget): the update wait, with headroom. None: the provider's (30 minutes)."""


class StageArgs(TypedDict):
    """One stage of a replica's start."""

    name: str
    """Stage name: node boot, driver install, image pull, weight fetch, model load, preempt spare."""
    seconds: int
    """Seconds the stage takes."""
    note: NotRequired[str]
    """Why the stage is removed, overlapped or longer than configured."""


class GroupEstimateArgs(TypedDict):
    """How long a new replica takes to start on one GPU group."""

    group: str
    """The GPU node group."""
    spare_slots: NotRequired[int]
    """Spare slots held on the group. Default: `0`."""
    new_node: list[StageArgs]
    """Stages when the replica needs a new node (no spare slot left)."""
    spare: list[StageArgs]
    """Stages when the replica preempts a placeholder."""
    first_up: NotRequired[list[StageArgs]]
    """Stages on the group's first `up` when it starts below its maxNodes: a replica may need a node the autoscaler adds only once the group's first node advertises its GPUs, and that node then passes the new-node path. Empty: the new-node path."""
    start: NotRequired[str]
    """How the group starts on its first `up`: the nodes its driver creates, against what its services need."""


class GpuOperatorArgs(TypedDict):
    """The NVIDIA GPU operator, its MIG and sharing configs, and the GPU node contract on the node groups."""

    gpu_operator: NotRequired[GpuOperatorSettingsArgs]
    """Driver mode and DCGM exporter (the stack file's `gpuOperator`)."""
    node_groups: list[NodeGroupArgs]
    """The cluster's node groups: GPU groups get the node contract, every group's taints are tolerated by the operator's node agents."""
    magnum_labeller: NotRequired[str]
    """The Magnum driver that labels the nodes (`magnum-cluster-api`, `magnum-capi-helm`, `heat`); unset on an existing cluster."""
    cold_start: NotRequired[list[GroupEstimateArgs]]
    """Per GPU group, the cold-start estimate: how long a joining GPU node takes before the operator's pods run on it (the Helm wait allows for it)."""
    system_node_selector: NotRequired[dict[str, str]]
    """Node labels the GPU operator's own Deployment and Node Feature Discovery's master and garbage collector (not the node agents, which run on GPU nodes) select, so that they stay off GPU nodes: the platform's system group (on Magnum the cluster's first, CPU group). Empty: any node that admits them."""


class ColdStartArgs(TypedDict):
    """Spare GPU capacity (placeholder pods) and image pre-pull on the GPU node groups."""

    cold_start: NotRequired[ColdStartSettingsArgs]
    """Spare slots per group and image pre-pull (the stack file's `coldStart`)."""
    gpu_groups: NotRequired[list[NodeGroupArgs]]
    """The GPU node groups."""
    services: NotRequired[list[ServiceArgs]]
    """The services placed on those groups: their images are pre-pulled, and a spare slot is sized like the first version on its group."""
    pull_after_driver: NotRequired[bool]
    """Pre-pull only on nodes whose GPU driver works: nodes GPU feature discovery has labelled, which a GPU operator (the platform's or the Magnum driver's) runs once the driver and toolkit are ready. Off: on every node of the group at once, which on a new node delays the driver's images behind the Triton images (the kubelet pulls one image at a time); leave it off where no GPU operator labels the nodes. Default: `false`."""


class MeshArgs(TypedDict):
    """Istio (base, istiod, ingress gateway), the customer Gateway, Jaeger and Kiali."""

    mesh: NotRequired[MeshSettingsArgs]
    """Mesh settings (the stack file's `mesh`)."""
    ui: NotRequired[UiSettingsArgs]
    """Hosts on which Grafana and Kiali are served through the gateway."""
    hosts: NotRequired[list[str]]
    """Host names of the inference services the customer Gateway serves."""
    production: NotRequired[bool]
    """Protect Jaeger's volume; anonymous Kiali is refused. Default: `false`."""
    storage_class: NotRequired[str]
    """StorageClass of Jaeger's volume (default: the cluster's)."""
    request_timeout_seconds: NotRequired[int]
    """Longest route timeout of the services and graphs behind the gateway: a gateway pod that
stops drains this long, so no request it carries is cut. Default: `60`."""
    node_boot_seconds: NotRequired[int]
    """Seconds a VM takes to boot: about what a load balancer for the gateway takes. Default: `120`."""
    gateway_api: NotRequired[bool]
    """Install the Gateway API (v1.5.1 standard) and InferencePool (v1.4.0) CRDs and turn on istiod's inference extension: the stack has an LLM service (docs/serving.md: LLM routing). Default: `false`."""
    system_node_selector: NotRequired[dict[str, str]]
    """Node labels the pods of istiod, the ingress gateway, Jaeger and Kiali select, so that they stay off GPU nodes: the platform's system group (on Magnum the cluster's first, CPU group). Empty: any node that admits them."""


class ObservabilityArgs(TypedDict):
    """kube-prometheus-stack, prometheus-adapter, Loki, Alloy, Grafana with the platform's dashboards, and the alert rules."""

    observability: NotRequired[ObservabilitySettingsArgs]
    """Observability settings (the stack file's `observability`)."""
    ui: NotRequired[UiSettingsArgs]
    """Grafana's host and login."""
    production: NotRequired[bool]
    """Protect the Prometheus, Loki and Grafana volumes. Default: `false`."""
    services: NotRequired[list[ServiceArgs]]
    """The inference services the alert rules and dashboards watch."""
    graphs: NotRequired[list[GraphArgs]]
    """The inference graphs: those with `placement: ray` get the graph alerts and dashboard (an ensemble is a Triton service)."""
    gpu_groups: NotRequired[list[NodeGroupArgs]]
    """The GPU node groups the GPU alerts watch."""
    tls: NotRequired[bool]
    """The ingress gateway serves HTTPS (the URLs the endpoint probes and Grafana use). Default: `false`."""
    mesh_installed: NotRequired[bool]
    """The platform's mesh runs in the cluster: scrape istiod and the Envoy proxies. Default: `false`."""
    mesh_urls: NotRequired[dict[str, str]]
    """In-cluster URLs of the mesh UIs (`jaeger`, `kiali`): Jaeger becomes a Grafana datasource."""
    ui_urls: NotRequired[dict[str, str]]
    """Browser URLs of the UIs served through the gateway."""
    weights_s3: NotRequired[S3CacheArgs]
    """The S3 weight cache, whose endpoint holds Loki's bucket with `observability.lokiStorage: s3`."""
    s3_access_key_id: NotRequired[str]
    """Secret. Access key of that S3 endpoint."""
    s3_secret_access_key: NotRequired[str]
    """Secret. Secret key of that S3 endpoint."""
    grafana_oidc_client_secret: NotRequired[str]
    """Secret. Grafana's OIDC client secret, for `ui.grafana.auth: oidc`."""
    alert_receiver_secrets: NotRequired[dict[str, str]]
    """Secret. Per alert receiver, its credential (webhook URL, SMTP password, routing key)."""
    cold_start: NotRequired[list[GroupEstimateArgs]]
    """Per GPU group, the cold-start estimate (the Helm waits of DaemonSets on every GPU node allow for a joining node)."""
    autoscaler_installed: NotRequired[bool]
    """The platform's cluster autoscaler runs (Heat clusters with more than one node group): scrape its metrics. Default: `false`."""
    training_namespaces: NotRequired[list[str]]
    """The training teams' namespaces: their TrainJobs get the training alerts and dashboard (none: neither)."""
    training_cluster_queues: NotRequired[list[str]]
    """The training teams' Kueue ClusterQueues the training alerts watch."""
    system_node_selector: NotRequired[dict[str, str]]
    """Node labels the pods of Prometheus, Alertmanager, the Prometheus operator, kube-state-metrics, Grafana, prometheus-adapter and Loki (not the per-node exporters and Alloy, which run on every node) select, so that they stay off GPU nodes: the platform's system group (on Magnum the cluster's first, CPU group). Empty: any node that admits them."""


class InferenceNamespacesArgs(TypedDict):
    """Namespaces of the inference services: sidecar injection and STRICT mTLS for everything in them."""

    namespaces: NotRequired[list[str]]
    """Namespace names, each created once."""


class WeightCachesArgs(TypedDict):
    """Caches of model weights: an NFS file share and an S3 bucket, with what each namespace needs to read them."""

    weight_caches: NotRequired[WeightCacheSettingsArgs]
    """The caches (the stack file's `weightCaches`)."""
    file_share_namespaces: NotRequired[list[str]]
    """Namespaces whose services read the file share: each gets a claim on it."""
    read_only_namespaces: NotRequired[list[str]]
    """Namespaces of `file_share_namespaces` whose claim is read-only at its PersistentVolume (`nfs.readOnly`), whatever a pod asks: the training teams', so nothing there writes the share through it (serving's model repositories included)."""
    writable_directories: NotRequired[dict[str, dict[str, str]]]
    """Per namespace, read-write claims of single directories of the file share (claim name -> path in the share): a training job's checkpoint directory. Its PersistentVolume is rooted at the directory, which must exist on the share and be writable by the UID that writes it (NFS volumes take no fsGroup)."""
    s3_namespaces: NotRequired[list[str]]
    """Namespaces whose services read the S3 bucket: each gets the credentials Secret (and the bucket mount's claim)."""
    namespace_names: NotRequired[dict[str, pulumi.Input[str]]]
    """The namespaces above as their creator outputs them (a Namespace's `metadata.name`), keyed by name: each claim and Secret in one then waits for it, and the share and bucket do not. A namespace left out is used by its plain name."""
    production: NotRequired[bool]
    """Protect and retain the share, the bucket and the claims. Default: `false`."""
    s3_access_key_id: NotRequired[str]
    """Secret. Access key of the S3 cache."""
    s3_secret_access_key: NotRequired[str]
    """Secret. Secret key of the S3 cache."""
    node_groups: NotRequired[list[NodeGroupArgs]]
    """The cluster's node groups: the bucket mount's node plugin tolerates their taints."""
    subnet_cidr: NotRequired[pulumi.Input[str]]
    """CIDR of the cluster's node subnet: the addresses a Manila share grants read access to."""
    cold_start: NotRequired[list[GroupEstimateArgs]]
    """Per GPU group, the cold-start estimate (the bucket mount's node plugin runs on every GPU node)."""
    tuning_presets: NotRequired[dict[str, BatchingPresetArgs]]
    """Tuning presets the uploads may name beside the built-in `latency` and `throughput` (the stack file's `tuningPresets`; a name here replaces the built-in one)."""
    system_node_selector: NotRequired[dict[str, str]]
    """Node labels the csi-s3 provisioner's pods select, so that they stay off GPU nodes: the platform's system group (on Magnum the cluster's first, CPU group). Empty: any node that admits them. The node plugin runs on every node."""


class WeightsRefArgs(TypedDict):
    """Where a service's versions read their model repositories."""

    claim_name: NotRequired[pulumi.Input[str]]
    """PersistentVolumeClaim of the file share in the service's namespace (versions with `modelRepository.cache: fileShare`)."""
    mount_path: NotRequired[str]
    """Where the file share is mounted in Triton's container. Default: `/models`."""
    s3_secret_name: NotRequired[pulumi.Input[str]]
    """Secret with the S3 credentials (AWS_* variables) in the service's namespace (versions with cache `s3`)."""
    s3_endpoint: NotRequired[pulumi.Input[str]]
    """S3 endpoint URL of the bucket."""
    s3_bucket: NotRequired[pulumi.Input[str]]
    """The bucket holding the model repositories."""


class MeshRefArgs(TypedDict):
    """The mesh a workload is served through: the Istio Gateway, the ingress gateway's namespace and identity, the monitoring namespace, TLS."""

    gateway: NotRequired[pulumi.Input[str]]
    """`<namespace>/<name>` of the Istio Gateway that serves the hosts. Default: `istio-system/inference-gateway`."""
    ingress_namespace: NotRequired[pulumi.Input[str]]
    """Namespace of the ingress gateway pods: the only source the workload's NetworkPolicy admits besides monitoring. Default: `istio-system`."""
    ingress_pod_labels: NotRequired[dict[str, str]]
    """Labels of the ingress gateway's pods in `ingress_namespace`: the only pods there the workload's NetworkPolicy admits to Triton's HTTP and gRPC ports (a Ray graph's: Serve's), and in Istio's root namespace the pods Basic Auth's DENY policy selects. The default is the label the Istio gateway chart gives the pods of a release named `istio-ingressgateway` (`istio: <release without istio->`); give yours for another release name. Default: `{'istio': 'ingressgateway'}`."""
    ingress_principal: NotRequired[pulumi.Input[str]]
    """SPIFFE principal of the ingress gateway, the only outside caller the workload's AuthorizationPolicy allows. Default: `cluster.local/ns/istio-system/sa/istio-ingressgateway`."""
    monitoring_namespace: NotRequired[pulumi.Input[str]]
    """Namespace of the Prometheus that scrapes the workload's metrics. Default: `monitoring`."""
    tls: NotRequired[bool]
    """The gateway serves the hosts over HTTPS (the workload's URLs). Default: `false`."""


class TritonServiceArgs(TypedDict):
    """One Triton inference service: its versions with canary weights, autoscaling, auth, routing and monitoring."""

    service: ServiceArgs
    """The service (one entry of the stack file's `services`)."""
    gpu_groups: list[NodeGroupArgs]
    """The GPU node groups its versions run on."""
    weights: NotRequired[WeightsRefArgs]
    """Where the versions' model repositories are read."""
    cold_start: NotRequired[list[GroupEstimateArgs]]
    """Per GPU group, the cold-start estimate: how long `pulumi up` waits for a rollout (default: the platform's stage times)."""
    mesh: NotRequired[MeshRefArgs]
    """The mesh the service is served through (`Mesh.reference`): Gateway, ingress, monitoring, TLS."""
    production: NotRequired[bool]
    """A production stack: auth mode `none` is refused, and so are `basic` and `jwt` unless `mesh.tls` (their clients' credentials would cross the network in clear). Default: `false`."""
    tuning_priority_class: NotRequired[pulumi.Input[str]]
    """PriorityClass of the versions' tuning runs (the platform's `gpu-tuning`: below serving, preempting nothing); without one a run has the default priority, so a serving replica cannot preempt it (docs/tuning.md)."""
    gateway_tls_secret: NotRequired[str]
    """`<namespace>/<name>` of the TLS Secret an LLM service's Gateway serves HTTPS with (the platform's: the ingress gateway's, `mesh.tls.secretName`); none serves HTTP."""
    gateway_annotations: NotRequired[dict[str, str]]
    """Annotations of the LoadBalancer Service istiod deploys for an LLM service's Gateway (the platform's: `mesh.gatewayAnnotations`), given as the Gateway's `spec.infrastructure.annotations`: at most 8, none under `gateway.networking.k8s.io/`."""
    model_configs: NotRequired[dict[str, str]]
    """config.pbtxt text per model name, served beside the model repository: every version gets them as a second model repository (a graph's ensemble, for example). Each must parse as Triton's ModelConfig; its `name`, if set, is the key. A name here must not also be a model in a version's repository: Triton refuses a model that two repositories hold."""


class InferenceGraphArgs(TypedDict):
    """A chain of Triton models: a Triton ensemble on one GPU share, or a KubeRay RayService across nodes."""

    graph: GraphArgs
    """The graph (one entry of the stack file's `graphs`)."""
    gpu_groups: list[NodeGroupArgs]
    """The GPU node groups its steps run on."""
    weights: NotRequired[WeightsRefArgs]
    """Where the steps' model repositories are read."""
    cold_start: NotRequired[list[GroupEstimateArgs]]
    """Per GPU group, the cold-start estimate: how long `pulumi up` waits for a Ray graph's new RayCluster to take over (default: the platform's stage times)."""
    mesh: NotRequired[MeshRefArgs]
    """The mesh the graph is served through (`Mesh.reference`): Gateway, ingress, monitoring, TLS."""
    production: NotRequired[bool]
    """A production stack: auth mode `none` is refused, and so are `basic` and `jwt` unless `mesh.tls` (their clients' credentials would cross the network in clear). Default: `false`."""


class ModelPipelineArgs(TypedDict):
    """Argo Workflows (controller only) and, per service with `pipeline`, a WorkflowTemplate that builds a TensorRT engine, tunes it with Model Analyzer, publishes it as a new version in the weight cache and ends in a stack-file patch for it as a canary."""

    services: NotRequired[list[ServiceArgs]]
    """Services with `pipeline`: each gets, in its namespace, the workflows' ServiceAccount and Role and its WorkflowTemplate."""
    gpu_groups: NotRequired[list[NodeGroupArgs]]
    """The GPU node groups of the pipelines' base versions (the engine is built and measured there)."""
    weights: NotRequired[dict[str, WeightsRefArgs]]
    """Per service namespace, its weight caches: the ONNX model is read from, and the new version written to, the base version's cache."""
    priority_class: NotRequired[pulumi.Input[str]]
    """PriorityClass of the GPU steps (the platform's `gpu-tuning`: below serving, preempting nothing); without one they have the default priority."""
    submitters: NotRequired[list[PipelineSubmitterArgs]]
    """Subjects bound to each pipeline's submit Role (`<service>-pipeline-submit`: run the service's template, follow its workflows)."""
    system_node_selector: NotRequired[dict[str, str]]
    """Node labels the Argo Workflows controller's pods select, so that they stay off GPU nodes: the platform's system group (on Magnum the cluster's first, CPU group). Empty: any node that admits them."""


class PipelineRefArgs(TypedDict):
    """Where a service's model pipeline is: what a publishing job's Workflow names."""

    namespace: str
    """The service's namespace, where its WorkflowTemplate is."""
    template: str
    """The WorkflowTemplate (`<service>-pipeline`)."""
    cache: Literal["fileShare", "s3"]
    """The weight cache the pipeline reads `onnx` from: its base version's. One of: `fileShare`, `s3`."""


class TrainingArgs(TypedDict):
    """Kubeflow Trainer (with JobSet) from its pinned chart, the platform's ClusterTrainingRuntimes, and the teams' TrainJobs on the GPU groups."""

    training: NotRequired[TrainingSettingsArgs]
    """Teams, runtimes, jobs and the GPU groups' NCCL networks (the stack file's `training`)."""
    gpu_groups: NotRequired[list[NodeGroupArgs]]
    """The GPU node groups the jobs run on: their node contract (selector, taints) and GPU shares."""
    weights: NotRequired[dict[str, WeightsRefArgs]]
    """Per team namespace whose jobs read or write a weight cache, that namespace's caches (the file share's claim, the S3 Secret)."""
    create_namespaces: NotRequired[bool]
    """Create each team's namespace (Pod Security `restricted`). The platform creates them itself, before the weight caches' claims in them, and passes false. Default: `true`."""
    install_trainer: NotRequired[bool]
    """Install Kubeflow Trainer (with JobSet) from its pinned chart. The platform installs it itself, before Kueue (whose TrainJob integration needs Trainer's CRDs when it starts), and passes false. Default: `true`."""
    priority_class: NotRequired[str]
    """PriorityClass of the jobs' GPU pods (the platform's `gpu-training`: below serving, which preempts them; they preempt nothing); none: the default priority, level with serving."""
    system_node_selector: NotRequired[dict[str, str]]
    """Node labels Trainer's and JobSet's controllers and the runtimes' data loaders and publish steps select (the system group). Empty: any node that admits them."""
    secrets: NotRequired[dict[str, str]]
    """Secret. The values the jobs' `secretEnv` names (the stack's `trainingSecrets`), by name."""
    production: NotRequired[bool]
    """A production stack: its TrainJobs say that `platformctl diff` refuses an edit that would kill them while they run, unless the job's `restartOnEdit` accepts it. Default: `false`."""
    pipelines: NotRequired[dict[str, PipelineRefArgs]]
    """Per service a job publishes to (`publishTo.service`), its model pipeline: namespace, WorkflowTemplate and the weight cache it reads the ONNX file from."""
