"""`cluster`: the Kubernetes cluster (Magnum or existing) and its node groups, with their checks."""

from __future__ import annotations

from typing import Annotated, Literal, Optional, Union

from pydantic import AfterValidator, Field, field_validator, model_validator

from inference_platform.core import grammar, versions
from inference_platform.core.driver_support import OsId
from inference_platform.core.node_contract import magnum_group_selector
from inference_platform.settings.base import Cidr, GpuModel, Labels, Model, ShortName, Text
from inference_platform.settings.errors import KeyPath

# Node group roles Magnum gives its own groups (extra NodeGroups use their name as role).
MAGNUM_RESERVED_ROLES = frozenset({"worker", "master", "default-worker", "default-master"})


# The containerd the platform gives the Heat driver: a version with CRI v1 and its tarball's
# checksum, as openstack/magnum stable/2026.1 doc/source/user/index.rst pairs them in its
# cluster template examples (install-cri.sh downloads cri-containerd-cni-<version> and checks it).
HEAT_CONTAINERD = {
    "containerd_version": "1.6.31",
    "containerd_tarball_sha256": "75afb9b9674ff509ae670ef3ab944ffcdece8ea9f7d92c42307693efa7b6109d",
}
# Magnum's Heat driver runs docker.io/openstackmagnum/cluster-autoscaler:<autoscaler_tag> whenever
# auto_scaling_enabled is set, by default v1.18.1 (magnum stable/2026.1 k8s_fedora_coreos_v1
# kubecluster.yaml autoscaler_tag; fragments/enable-auto-scaling.sh). Its Magnum provider knows no
# node groups before 1.19 (cluster-autoscaler 1.18.1 magnum_cloud_provider.go NodeGroupForNode
# returns the default group for every node without node-role.kubernetes.io/master, a label Magnum
# no longer sets; magnum_manager_heat.go reads the size from the cluster's node_count, which
# Magnum sums over every worker group, and writes it back as the default group's), and it lists
# PodDisruptionBudgets as policy/v1 only from 1.25 (utils/kubernetes/listers.go, c127763a45).
HEAT_AUTOSCALER_DEFAULT_TAG = "v1.18.1"
NODE_GROUPS_AUTOSCALER_MINOR = 19
PDB_V1_MINOR = 25
# Kubernetes removed the CRI v1alpha2 API in 1.26 (kubelet needs CRI v1): containerd 1.6 or later.
CRI_V1_KUBE_MINOR = 26
CRI_V1_CONTAINERD = (1, 6)


MIG_CAPABLE: frozenset[str] = frozenset(
    {"A100-40GB", "A100-80GB", "H100-80GB", "H100-94GB", "H200-141GB", "A30-24GB"}
)


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
    """OS of the group's nodes, which decides the GPU driver modes that work (docs/gpu.md: OS and GPU driver mode). Mode `magnum`: default the template's `os`; required with `image` on a GPU group. Mode `existing`: required on GPU groups while the GPU operator installs the driver (driver mode `precompiled` or `compiled`)."""
    min_nodes: int = Field(default=1, ge=0, le=1000)
    """Fewest nodes the cluster autoscaler keeps."""
    max_nodes: int = Field(default=1, ge=1, le=1000)
    """Most nodes the cluster autoscaler may create."""
    initial_nodes: Optional[int] = Field(default=None, ge=0, le=1000)
    """Heat only: nodes at creation (default: minNodes). The Cluster API drivers start an autoscaled group at minNodes (Cluster API defaults its MachineDeployment's replicas to the minimum), so there a value above minNodes is refused: raise minNodes instead."""
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
    """OS of `image` (the platform cannot read it from the image, so it must describe the image): one the Magnum driver boots, and the default OS of every node group (docs/gpu.md: OS and GPU driver mode)."""
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
    """Source CIDRs allowed to reach the API load balancer (empty: any). `heat` only (`master_lb_allowed_cidrs`; Magnum adds the node subnet): `magnum-cluster-api` has no such label, and what magnum-capi-helm passes (`apiServer.allowedCidrs`) the openstack-cluster chart does not apply. Include where `pulumi up` runs."""

    @property
    def kubernetes_minor(self) -> int:
        """The minor of `kubernetes_version` (v1.<minor>.<patch>, its pattern)."""
        return int(self.kubernetes_version.split(".")[1])

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

    @property
    def system_selector(self) -> dict[str, str]:
        """Node labels of the group the platform's own pods run on, off the GPU nodes: on a Magnum
        cluster its first group (Magnum's default worker group, a CPU group: gpu/profiles.py refuses GPUs
        there). Empty on an existing cluster, which names no such group: there they run wherever
        they are admitted."""
        return dict(self.node_groups[0].selector) if self.mode == "magnum" else {}

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


def _version_tuple(text: str) -> Optional[tuple[int, ...]]:
    parts = text.lstrip("v").split(".")
    return tuple(int(p) for p in parts[:2]) if len(parts) >= 2 and all(p.isdigit() for p in parts[:2]) else None


def _heat_containerd_problems(m: MagnumCluster) -> list[tuple[KeyPath, str]]:
    """A containerd the user pins in template.labels: one the kubelet can talk to, with its checksum."""
    labels = m.template.labels
    if m.driver != "heat" or "containerd_version" not in labels:
        return []
    path: KeyPath = ("cluster", "magnum", "template", "labels", "containerd_version")
    version = _version_tuple(labels["containerd_version"])
    kube_minor = m.kubernetes_minor
    if version is None:
        return [(path, f"{labels['containerd_version']!r} is not a containerd release; allowed: <major>.<minor>.<patch>, e.g. "
                       f"{HEAT_CONTAINERD['containerd_version']}")]
    if kube_minor >= CRI_V1_KUBE_MINOR and version < CRI_V1_CONTAINERD:
        return [(path, f"containerd {labels['containerd_version']} has no CRI v1, which the kubelet of {m.kubernetes_version} needs, "
                       f"so nodes never register; allowed: 1.6 or later, or remove the key ({HEAT_CONTAINERD['containerd_version']})")]
    if "containerd_tarball_sha256" not in labels:
        # install-cri.sh checks the tarball against containerd_tarball_sha256 and stops on a mismatch.
        return [(path, "needs containerd_tarball_sha256 in template.labels too (the sha256 of that version's "
                       "cri-containerd-cni tarball): the heat driver checks the download against it")]
    return []


def _heat_autoscaler_problem(c: ClusterSettings) -> Optional[tuple[KeyPath, str]]:
    """The autoscaler Magnum's Heat driver deploys, where it can act (other groups beside the
    default one, or a default group whose bounds differ): one that knows node groups and reads
    the PodDisruptionBudgets the cluster serves."""
    m = c.magnum
    default = c.node_groups[0]
    if m.driver != "heat" or m.template_id or (len(c.node_groups) == 1 and default.min_nodes == default.max_nodes):
        return None
    path: KeyPath = ("cluster", "magnum", "template", "labels", "autoscaler_tag")
    tag = m.template.labels.get("autoscaler_tag", HEAT_AUTOSCALER_DEFAULT_TAG)
    kube_minor = m.kubernetes_minor
    named = "Magnum's default " if "autoscaler_tag" not in m.template.labels else ""
    least = PDB_V1_MINOR if kube_minor >= PDB_V1_MINOR else NODE_GROUPS_AUTOSCALER_MINOR
    upstream = versions.CLUSTER_AUTOSCALER_IMAGE
    if not upstream.rsplit(":", 1)[1].startswith(f"v1.{kube_minor}."):
        upstream = f"registry.k8s.io/autoscaling/cluster-autoscaler:v1.{kube_minor}.<patch>"
    allowed = (f"allowed: a tag of v1.{least} or later, best v1.{kube_minor}.x for Kubernetes 1.{kube_minor} (the platform cannot "
               f"list openstackmagnum's tags; container_infra_prefix moves every image Magnum pulls to your mirror, "
               f"where {upstream} may go as cluster-autoscaler:<its tag>)")
    version = _version_tuple(tag)
    if version is None:
        return path, f"{tag!r} is not a cluster-autoscaler release; {allowed}"
    if version < (1, NODE_GROUPS_AUTOSCALER_MINOR) and len(c.node_groups) > 1:
        return path, (f"the heat driver would run {named}cluster-autoscaler {tag}, which knows no node groups: it takes every "
                      f"node for the default group's and resizes that group from the whole cluster's node count; {allowed}")
    if kube_minor >= PDB_V1_MINOR and version < (1, PDB_V1_MINOR):
        return path, (f"the heat driver would run {named}cluster-autoscaler {tag}, which lists PodDisruptionBudgets through "
                      f"policy/v1beta1, gone since Kubernetes 1.25, so it plans the default group's scale-downs without them; {allowed}")
    return None


def cluster_problems(c: ClusterSettings) -> list[tuple[KeyPath, str]]:
    problems: list[tuple[KeyPath, str]] = []
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
        if m.node_labeller != "heat" and g.initial_nodes is not None and g.initial_nodes > g.min_nodes:
            # Both Cluster API drivers leave an autoscaled group's replicas unset and Cluster API
            # defaults them to the min-size annotation (gpu/first_up.py start_nodes, with the sources).
            problems.append((("cluster", "nodeGroups", i, "initialNodes"),
                             f"{m.node_labeller} starts an autoscaled group at minNodes (Cluster API defaults its "
                             f"MachineDeployment's replicas to the minimum), so {g.initial_nodes} would not take effect; "
                             f"remove the key, or raise minNodes to {g.initial_nodes} to start the group that large"))
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
                         "remove the key and restrict the API load balancer with a security group, or use driver heat"))
    if m.api_allowed_cidrs and m.node_labeller == "magnum-capi-helm":
        # magnum-capi-helm 1.4.0 driver.py writes apiServer.allowedCidrs; azimuth-cloud/capi-helm-charts
        # openstack-cluster reads apiServer.allowedCIDRs since 0.24.0 (eac90cd6), and before it wrote
        # allowedCidrs into the OpenStackCluster, a field CAPO v1beta1 spells allowedCIDRs.
        problems.append((("cluster", "magnum", "apiAllowedCidrs"), "magnum-capi-helm passes the list as apiServer.allowedCidrs, "
                         "which the openstack-cluster chart does not apply (it reads allowedCIDRs), so the API would stay open; "
                         "remove the key and restrict the API load balancer with a security group, or use driver heat"))
    problems.extend(_heat_containerd_problems(m))
    autoscaler = _heat_autoscaler_problem(c)
    if autoscaler:
        problems.append(autoscaler)
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
