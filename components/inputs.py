"""What each component takes: its own settings and the names it consumes from other parts.

Each model here is validated like the stack file (the same settings models, the same
errors) and is the source of its component's arguments type: `components/args.py` is
generated from these models and their docstrings (`python -m platformctl docs`), so a
key is documented once. `InferencePlatform` alone maps a stack's `Settings` to these
(platform.py); a program that uses one component alone builds its arguments directly.
Names, not resources: what one part needs from another is a namespace, a Gateway, a
claim or Secret name, a URL, handed over in handles (`MeshRef`, `WeightsRef`) where several
go together. Ordering comes from `dependsOn` on the component.
"""

from __future__ import annotations

from typing import Annotated, Any, Iterable, Optional, TypeVar

from pydantic import AfterValidator, Field, SecretStr, ValidationError, field_validator

from inference_platform.core.input_types import NameInput, TextInput
from inference_platform.mesh.ref import MeshRef
from inference_platform.serving.model_config import ModelConfigError, parse_model_config
from inference_platform.settings.base import DnsLabel, Host, Model, TritonModelName
from inference_platform.settings.checks import ANONYMOUS_KIALI
from inference_platform.settings.cluster import ClusterSettings, NodeGroup, cluster_problems
from inference_platform.settings.errors import ConfigError, KeyPath, pydantic_problems
from inference_platform.settings.gpu import ColdStartSettings, GpuOperatorSettings
from inference_platform.settings.graphs import Graph, graph_problems
from inference_platform.settings.mesh import MeshSettings
from inference_platform.settings.observability import ObservabilitySettings
from inference_platform.settings.serving import ModelRepository, Service, pipeline_problems, service_problems
from inference_platform.settings.stack import SECRET_KEYS
from inference_platform.settings.tuning import BatchingPreset, PresetName
from inference_platform.settings.ui import UiSettings
from inference_platform.settings.weights import MANILA_NEEDS_CIDRS, S3Cache, WeightCacheSettings, needs_access_cidrs
from inference_platform.timing.estimates import GroupEstimate
from inference_platform.tuning.presets import upload_preset_problems


class ClusterInputs(Model):
    """A Magnum cluster with its node groups, or an existing cluster, and the Kubernetes provider for it."""

    cluster: ClusterSettings
    """The cluster and its node groups (the stack file's `cluster`)."""
    production: bool = False
    """Protect the Magnum cluster and its node groups from deletion."""
    kubeconfig: Optional[SecretStr] = None
    """Secret. kubeconfig of an existing cluster (mode `existing`); without it, the ambient kubeconfig."""
    gpu_node_ready_seconds: int = Field(default=300, ge=0, le=14400)
    """Seconds from a new VM to a GPU node that advertises its GPUs (boot, then the driver): how long the autoscaler waits for a node it asked for."""

    def problems(self) -> list[tuple[KeyPath, str]]:
        return cluster_problems(self.cluster)


class GpuOperatorInputs(Model):
    """The NVIDIA GPU operator, its MIG and sharing configs, and the GPU node contract on the node groups."""

    gpu_operator: GpuOperatorSettings = GpuOperatorSettings()
    """Driver mode and DCGM exporter (the stack file's `gpuOperator`)."""
    node_groups: list[NodeGroup] = Field(min_length=1)
    """The cluster's node groups: GPU groups get the node contract, every group's taints are tolerated by the operator's node agents."""
    magnum_labeller: Optional[str] = None
    """The Magnum driver that labels the nodes (`magnum-cluster-api`, `magnum-capi-helm`, `heat`); unset on an existing cluster."""
    cold_start: list[GroupEstimate] = []
    """Per GPU group, the cold-start estimate: how long a joining GPU node takes before the operator's pods run on it (the Helm wait allows for it)."""

    @property
    def gpu_groups(self) -> list[NodeGroup]:
        return [g for g in self.node_groups if g.is_gpu]


class ColdStartInputs(Model):
    """Spare GPU capacity (placeholder pods) and image pre-pull on the GPU node groups."""

    cold_start: ColdStartSettings = ColdStartSettings()
    """Spare slots per group and image pre-pull (the stack file's `coldStart`)."""
    gpu_groups: list[NodeGroup] = []
    """The GPU node groups."""
    services: list[Service] = []
    """The services placed on those groups: their images are pre-pulled, and a spare slot is sized like the first version on its group."""


class MeshInputs(Model):
    """Istio (base, istiod, ingress gateway), the customer Gateway, Jaeger and Kiali."""

    mesh: MeshSettings = MeshSettings()
    """Mesh settings (the stack file's `mesh`)."""
    ui: UiSettings = UiSettings()
    """Hosts on which Grafana and Kiali are served through the gateway."""
    hosts: list[Host] = []
    """Host names of the inference services the customer Gateway serves."""
    production: bool = False
    """Protect Jaeger's volume; anonymous Kiali is refused."""
    storage_class: Optional[str] = None
    """StorageClass of Jaeger's volume (default: the cluster's)."""
    node_boot_seconds: int = Field(default=120, ge=0, le=7200)
    """Seconds a VM takes to boot: about what a load balancer for the gateway takes."""

    def problems(self) -> list[tuple[KeyPath, str]]:
        """What the stack file's cross checks refuse, for the component used alone."""
        if self.production and self.mesh.kiali_auth == "anonymous":
            return [(("mesh", "kiali_auth"), ANONYMOUS_KIALI)]
        return []


class ObservabilityInputs(Model):
    """kube-prometheus-stack, prometheus-adapter, Loki, Alloy, Grafana with the platform's dashboards, and the alert rules."""

    observability: ObservabilitySettings = ObservabilitySettings()
    """Observability settings (the stack file's `observability`)."""
    ui: UiSettings = UiSettings()
    """Grafana's host and login."""
    production: bool = False
    """Protect the Prometheus, Loki and Grafana volumes."""
    services: list[Service] = []
    """The inference services the alert rules and dashboards watch."""
    gpu_groups: list[NodeGroup] = []
    """The GPU node groups the GPU alerts watch."""
    tls: bool = False
    """The ingress gateway serves HTTPS (the URLs the endpoint probes and Grafana use)."""
    mesh_installed: bool = False
    """The platform's mesh runs in the cluster: scrape istiod and the Envoy proxies."""
    mesh_urls: dict[str, str] = {}
    """In-cluster URLs of the mesh UIs (`jaeger`, `kiali`): Jaeger becomes a Grafana datasource."""
    ui_urls: dict[str, str] = {}
    """Browser URLs of the UIs served through the gateway."""
    weights_s3: Optional[S3Cache] = None
    """The S3 weight cache, whose endpoint holds Loki's bucket with `observability.lokiStorage: s3`."""
    s3_access_key_id: Optional[SecretStr] = None
    """Secret. Access key of that S3 endpoint."""
    s3_secret_access_key: Optional[SecretStr] = None
    """Secret. Secret key of that S3 endpoint."""
    grafana_oidc_client_secret: Optional[SecretStr] = None
    """Secret. Grafana's OIDC client secret, for `ui.grafana.auth: oidc`."""
    alert_receiver_secrets: dict[str, SecretStr] = {}
    """Secret. Per alert receiver, its credential (webhook URL, SMTP password, routing key)."""
    cold_start: list[GroupEstimate] = []
    """Per GPU group, the cold-start estimate (the Helm waits of DaemonSets on every GPU node allow for a joining node)."""
    autoscaler_installed: bool = False
    """The platform's cluster autoscaler runs (Heat clusters with more than one node group): scrape its metrics."""

    def problems(self) -> list[tuple[KeyPath, str]]:
        """What the configured parts need (the stack file's cross checks ensure it), for the component used alone."""
        needed: list[tuple[str, Any, str]] = []
        if self.observability.loki_storage == "s3":
            loki = "observability.loki_storage 's3' needs"
            needed += [("weights_s3", self.weights_s3, f"{loki} the S3 cache holding Loki's bucket"),
                       ("s3_access_key_id", self.s3_access_key_id, f"{loki} the S3 cache's access key"),
                       ("s3_secret_access_key", self.s3_secret_access_key, f"{loki} the S3 cache's secret key")]
        if self.ui.grafana is not None and self.ui.grafana.auth == "oidc":
            needed.append(("grafana_oidc_client_secret", self.grafana_oidc_client_secret,
                           "ui.grafana.auth 'oidc' needs Grafana's OIDC client secret"))
        problems: list[tuple[KeyPath, str]] = [((key,), why) for key, value, why in needed if value is None]
        problems += [(("alert_receiver_secrets", r.name), f"receiver {r.name!r} needs its {r.kind} credential")
                     for r in self.observability.alerting.receivers if r.name not in self.alert_receiver_secrets]
        return problems


class InferenceNamespacesInputs(Model):
    """Namespaces of the inference services: sidecar injection and STRICT mTLS for everything in them."""

    namespaces: list[DnsLabel] = []
    """Namespace names, each created once."""


class WeightCachesInputs(Model):
    """Caches of model weights: an NFS file share and an S3 bucket, with what each namespace needs to read them."""

    weight_caches: WeightCacheSettings = WeightCacheSettings()
    """The caches (the stack file's `weightCaches`)."""
    file_share_namespaces: list[DnsLabel] = []
    """Namespaces whose services read the file share: each gets a claim on it."""
    s3_namespaces: list[DnsLabel] = []
    """Namespaces whose services read the S3 bucket: each gets the credentials Secret (and the bucket mount's claim)."""
    namespace_names: dict[DnsLabel, NameInput] = {}
    """The namespaces above as their creator outputs them (a Namespace's `metadata.name`), keyed by name: each claim and Secret in one then waits for it, and the share and bucket do not. A namespace left out is used by its plain name."""
    production: bool = False
    """Protect and retain the share, the bucket and the claims."""
    s3_access_key_id: Optional[SecretStr] = None
    """Secret. Access key of the S3 cache."""
    s3_secret_access_key: Optional[SecretStr] = None
    """Secret. Secret key of the S3 cache."""
    node_groups: list[NodeGroup] = []
    """The cluster's node groups: the bucket mount's node plugin tolerates their taints."""
    subnet_cidr: Optional[TextInput] = None
    """CIDR of the cluster's node subnet: the addresses a Manila share grants read access to."""
    cold_start: list[GroupEstimate] = []
    """Per GPU group, the cold-start estimate (the bucket mount's node plugin runs on every GPU node)."""
    tuning_presets: dict[PresetName, BatchingPreset] = {}
    """Tuning presets the uploads may name beside the built-in `latency` and `throughput` (the stack file's `tuningPresets`; a name here replaces the built-in one)."""

    def problems(self) -> list[tuple[KeyPath, str]]:
        """What the stack file's cross checks ensure about the caches, for the component used alone."""
        found: list[tuple[KeyPath, str]] = []
        if needs_access_cidrs(self.weight_caches, self.subnet_cidr):
            found.append((("weight_caches", "fileShare", "accessCidrs"), MANILA_NEEDS_CIDRS))
        if self.weight_caches.s3 is not None:
            found += [((key,), f"weightCaches.s3 needs the S3 cache's {what}")
                      for key, value, what in (("s3_access_key_id", self.s3_access_key_id, "access key"),
                                               ("s3_secret_access_key", self.s3_secret_access_key, "secret key"))
                      if value is None]
            found += [(("weight_caches", *path), why)
                      for path, why in upload_preset_problems(self.weight_caches.s3, self.tuning_presets)]
        return found


class WeightsRef(Model):
    """Where a service's versions read their model repositories."""

    claim_name: Optional[NameInput] = None
    """PersistentVolumeClaim of the file share in the service's namespace (versions with `modelRepository.cache: fileShare`)."""
    mount_path: str = "/models"
    """Where the file share is mounted in Triton's container."""
    s3_secret_name: Optional[NameInput] = None
    """Secret with the S3 credentials (AWS_* variables) in the service's namespace (versions with cache `s3`)."""
    s3_endpoint: Optional[TextInput] = None
    """S3 endpoint URL of the bucket."""
    s3_bucket: Optional[TextInput] = None
    """The bucket holding the model repositories."""


def _model_config_text(text: str) -> str:
    try:
        parse_model_config(text, "config.pbtxt")
    except ModelConfigError as err:
        raise ValueError(err.reason) from None  # the key path names the model
    return text


ModelConfigText = Annotated[str, AfterValidator(_model_config_text)]


# What a version reading each cache needs to know from `WeightsRef`.
WEIGHTS_NEEDED = {"fileShare": ("claim_name",), "s3": ("s3_secret_name", "s3_endpoint", "s3_bucket")}


def missing_weights(weights: WeightsRef, repositories: Iterable[tuple[KeyPath, ModelRepository]]) -> list[tuple[KeyPath, str]]:
    """Model repositories (each with the key path of what reads it) whose cache `weights` does not name."""
    found = []
    for path, repository in repositories:
        missing = [key for key in WEIGHTS_NEEDED[repository.cache] if getattr(weights, key) is None]
        if missing:
            found.append((path + ("modelRepository", "cache"),
                          f"weight cache {repository.cache!r} needs weights.{', weights.'.join(missing)}"))
    return found


class TritonServiceInputs(Model):
    """One Triton inference service: its versions with canary weights, autoscaling, auth, routing and monitoring."""

    service: Service
    """The service (one entry of the stack file's `services`)."""
    gpu_groups: list[NodeGroup] = Field(min_length=1)
    """The GPU node groups its versions run on."""
    weights: WeightsRef = WeightsRef()
    """Where the versions' model repositories are read."""
    cold_start: list[GroupEstimate] = []
    """Per GPU group, the cold-start estimate: how long `pulumi up` waits for a rollout (default: the platform's stage times)."""
    mesh: MeshRef = MeshRef()
    """The mesh the service is served through (`Mesh.reference`): Gateway, ingress, monitoring, TLS."""
    tuning_priority_class: Optional[NameInput] = None
    """PriorityClass of the versions' tuning runs (the platform's `gpu-tuning`: below serving, preempting nothing); without one a run has the default priority, so a serving replica cannot preempt it (README "Tuning a model")."""
    model_configs: dict[TritonModelName, ModelConfigText] = {}
    """config.pbtxt text per model name, served beside the model repository: every version gets them as a second model repository (a graph's ensemble, for example). Each must parse as Triton's ModelConfig; its `name`, if set, is the key. A name here must not also be a model in a version's repository: Triton refuses a model that two repositories hold."""

    @field_validator("model_configs")
    @classmethod
    def _named_as_keyed(cls, configs: dict[str, str]) -> dict[str, str]:
        # Triton loads a model only from the directory of its name (model_repository_manager.cc:
        # "directory name must equal model name"); an empty name becomes the directory's.
        for model, text in configs.items():
            named = parse_model_config(text, f"model_configs.{model}").name
            if named and named != model:
                raise ValueError(f"the config of model {model!r} names model {named!r}; "
                                 f"allowed: name: \"{model}\", or no name")
        return configs

    def problems(self) -> list[tuple[KeyPath, str]]:
        """The stack file's checks of one service, with the same messages, and that `weights`
        names what each version's cache needs."""
        found = [(("service", *path), why) for path, why in service_problems(self.service, {g.name: g for g in self.gpu_groups})]
        return found + missing_weights(self.weights, ((("service", "versions", vi), v.model_repository)
                                                      for vi, v in enumerate(self.service.versions)))


class InferenceGraphInputs(Model):
    """A chain of Triton models: a Triton ensemble on one GPU share, or a KubeRay RayService across nodes."""

    graph: Graph
    """The graph (one entry of the stack file's `graphs`)."""
    gpu_groups: list[NodeGroup] = Field(min_length=1)
    """The GPU node groups its steps run on."""
    weights: WeightsRef = WeightsRef()
    """Where the steps' model repositories are read."""
    mesh: MeshRef = MeshRef()
    """The mesh the graph is served through (`Mesh.reference`): Gateway, ingress, monitoring, TLS."""

    def problems(self) -> list[tuple[KeyPath, str]]:
        """The stack file's checks of one graph, and that `weights` names what each step's cache needs."""
        found = [(("graph", *path), why) for path, why in graph_problems(self.graph, {g.name: g for g in self.gpu_groups})]
        return found + missing_weights(self.weights, ((("graph", "steps", si), step.model_repository)
                                                      for si, step in enumerate(self.graph.steps)))


class ModelPipelineInputs(Model):
    """Argo Workflows (controller only) and, per service with `pipeline`, a WorkflowTemplate that builds a TensorRT engine, tunes it with Model Analyzer, publishes it as a new version in the weight cache and ends in a stack-file patch for it as a canary."""

    services: list[Service] = []
    """Services with `pipeline`: each gets, in its namespace, the workflows' ServiceAccount and Role and its WorkflowTemplate."""
    gpu_groups: list[NodeGroup] = []
    """The GPU node groups of the pipelines' base versions (the engine is built and measured there)."""
    weights: dict[DnsLabel, WeightsRef] = {}
    """Per service namespace, its weight caches: the ONNX model is read from, and the new version written to, the base version's cache."""
    priority_class: Optional[NameInput] = None
    """PriorityClass of the GPU steps (the platform's `gpu-tuning`: below serving, preempting nothing); without one they have the default priority."""

    def problems(self) -> list[tuple[KeyPath, str]]:
        """Each service has a pipeline whose base version exists, runs a tritonserver image of a known release, on a given GPU group, reading a cache that `weights` names."""
        found: list[tuple[KeyPath, str]] = []
        groups = {g.name for g in self.gpu_groups}
        for si, svc in enumerate(self.services):
            at: KeyPath = ("services", si)
            if svc.pipeline is None:
                found.append((at + ("pipeline",), "required: only services with a pipeline run here"))
                continue
            own = pipeline_problems(svc)
            found += [(at + path, why) for path, why in own]
            if own:
                continue
            base = next(v for v in svc.versions if v.name == svc.pipeline.base_version)
            if base.gpu.group not in groups:
                found.append((at + ("pipeline", "baseVersion"), f"its GPU group {base.gpu.group!r} is not among gpu_groups"))
            weights = self.weights.get(svc.k8s_namespace)
            if weights is None:
                found.append((("weights", svc.k8s_namespace), f"required: the weight caches of namespace {svc.k8s_namespace!r}"))
            else:
                found += missing_weights(weights, [(at + ("versions", svc.versions.index(base)), base.model_repository)])
        return found


M = TypeVar("M", bound=Model)


def validated(model: type[M], args: Any, component: str) -> M:
    """A component's arguments as its input model: the model itself where the platform passes
    one already validated; otherwise validated like a stack file, errors naming `<component>Args`."""
    if isinstance(args, model):
        return args
    try:
        checked = model.model_validate(args)
    except ValidationError as err:
        raise ConfigError(f"{component}Args", pydantic_problems(err, SECRET_KEYS), namespace="") from None
    # What the stack file's cross checks say about this component's own settings.
    problems = checked.problems() if hasattr(checked, "problems") else []
    if problems:
        raise ConfigError(f"{component}Args", problems, namespace="")
    return checked
