"""The root of the stack file: `Settings`, every top-level key, and the keys that must be secrets."""

from __future__ import annotations

from typing import Annotated, Any, Optional, get_args

from pydantic import AfterValidator, BaseModel, BeforeValidator, SecretStr

from inference_platform.core import chart_source, grammar
from inference_platform.settings.base import NAMESPACE, Model, _checked, _top_level_bool
from inference_platform.settings.cluster import ClusterSettings, NodeGroup
from inference_platform.settings.gpu import ColdStartSettings, GpuOperatorSettings
from inference_platform.settings.graphs import Graph, graph_workload
from inference_platform.settings.mesh import MeshSettings
from inference_platform.settings.observability import ObservabilitySettings
from inference_platform.settings.policies import PolicySettings
from inference_platform.settings.serving import Service
from inference_platform.settings.training import TrainingSettings
from inference_platform.settings.tuning import BatchingPreset, ModelPipelineSettings, PresetName
from inference_platform.settings.ui import UiSettings
from inference_platform.settings.weights import WeightCacheSettings


def _chart_directory(value: Optional[str]) -> Optional[str]:
    problem = value is not None and chart_source.directory_problem(value, "directory")
    if problem:
        raise ValueError(problem)
    return value


def _reason(value: str) -> str:
    if not value.strip() or grammar.CONTROL.search(value) or len(value) > 200:
        raise ValueError("allowed: a reason in words, 1-200 characters on one line")
    return value


class Settings(Model):
    customer: Annotated[str, _checked(grammar.dns_label, 30)]
    """Customer name (DNS label). A stack whose name has a '-' must be named `<customer>-<environment>`, or that and a `-<suffix>` (docs/stack-files.md: The stack's name)."""
    environment: Annotated[str, _checked(grammar.dns_label, 20)]
    """Environment name (DNS label), e.g. dev or prod."""
    production: Annotated[bool, BeforeValidator(_top_level_bool)] = False
    """Production stack: stateful resources protected and retained, auth `none` and anonymous Kiali refused. An environment named prod, production or prd (bare or with a `-<suffix>`) must be production unless nonProductionReason says why not."""
    non_production_reason: Optional[Annotated[str, _checked(_reason)]] = None
    """Why a stack whose environment is named prod, production or prd (bare or with a `-<suffix>`) is not production (`production: false`), e.g. "load-test copy, no customer data"; refused with production: true. Absent: such an environment must set production: true."""
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
    """Hosts on which Grafana and Kiali reach their users through the ingress gateway (docs/observability.md: Reaching the UIs)."""
    weight_caches: WeightCacheSettings = WeightCacheSettings()
    """Caches of model weights."""
    services: list[Service] = []
    """Triton inference services."""
    graphs: list[Graph] = []
    """Inference graphs: chains of Triton models (docs/graphs.md)."""
    tuning_presets: dict[PresetName, BatchingPreset] = {}
    """Batching and instance-group presets by name, beside the built-in `latency` and `throughput` (a name given here replaces the built-in one); weight uploads render them into config variants (docs/tuning.md)."""
    model_pipeline: ModelPipelineSettings = ModelPipelineSettings()
    """Argo Workflows for the model pipeline (docs/tuning.md)."""
    training: Optional[TrainingSettings] = None
    """Training on the GPU groups beside serving: Kubeflow Trainer, its runtimes and the teams' TrainJobs, Kueue queues per team proven to leave serving its peak (docs/training.md, docs/training-quotas.md); absent: nothing of it is installed."""
    policies: PolicySettings = PolicySettings()
    """Policy pack settings of this stack (`python -m platformctl policy-config` passes them to `pulumi preview --policy-pack`)."""
    chart_directory: Annotated[Optional[str], AfterValidator(_chart_directory)] = None
    """Local directory of Helm charts, `<chart>/<version>/` for every pinned chart, used instead of the charts' repositories (air-gapped installs; docs/operations.md: Charts from a local directory). The environment variable INFERENCE_PLATFORM_CHART_DIR overrides it. Absent: the repositories."""
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
    training_secrets: dict[Annotated[str, _checked(grammar.dns_label, 63)], SecretStr] = {}
    """Secret. Values training jobs read from their environment, by name (`pulumi config set --secret --path 'trainingSecrets.<name>' ...`): a job's `secretEnv` names them, and the platform puts each in a Secret of the job's namespace that the TrainJob refers to (docs/training.md: Secrets in a job's environment)."""

    def node_group(self, name: str) -> NodeGroup:
        return next(g for g in self.cluster.node_groups if g.name == name)

    @property
    def workloads(self) -> list[Service]:
        """Every GPU workload as a service: the services, and each graph's (graph_workload)."""
        return [*self.services, *(graph_workload(g) for g in self.graphs)]

    @property
    def gpu_groups(self) -> list[NodeGroup]:
        return [g for g in self.cluster.node_groups if g.is_gpu]


def _holds_secret(annotation: Any) -> bool:
    """A SecretStr anywhere inside: in the type's arguments or in a nested model's fields."""
    if annotation is SecretStr:
        return True
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return any(_holds_secret(f.annotation) for f in annotation.model_fields.values())
    return any(_holds_secret(a) for a in get_args(annotation))


# The top-level keys whose values are secrets: a stack file must give them as secure values.
SECRET_KEYS: tuple[str, ...] = tuple(
    field.alias or name for name, field in Settings.model_fields.items() if _holds_secret(field.annotation))


def plain_text_in_secrets(stack_file_config: dict[str, Any]) -> list[tuple[tuple, str]]:
    """(key path, problem) for every value written in plain text inside a secret key of a stack
    file's `config:` mapping (keys as written, secure values as `{secure: ...}`), at any depth.
    Pulumi marks a whole key secret when one value in it is (`config set --secret --path`), so a
    plain value beside a secure one would still be committed in clear text."""
    problems: list[tuple[tuple, str]] = []

    def walk(value: Any, path: tuple) -> None:
        if isinstance(value, dict) and set(value) == {"secure"}:
            return
        if isinstance(value, (dict, list)):
            for key, item in value.items() if isinstance(value, dict) else enumerate(value):
                walk(item, (*path, key))
            return
        dotted = ".".join(str(p) for p in path)
        problems.append((path, f"plain text in the secret {path[0]}; allowed: a secure value (pulumi config set "
                               f"--secret --path '{dotted}' ...; offline: {{secure: <ciphertext>}})"))

    for key, value in stack_file_config.items():
        namespace, _, name = key.rpartition(":")
        if name in SECRET_KEYS and namespace in ("", NAMESPACE) and isinstance(value, (dict, list)):
            walk(value, (name,))
    return problems


def secure_outside_secrets(stack_file_config: dict[str, Any]) -> list[tuple[tuple, str]]:
    """(key path, problem) for every secure value of the project's keys outside SECRET_KEYS. The
    engine marks only a whole top-level key secret and passes it decrypted, so the program cannot
    tell the secure value from the plain ones beside it and would write it in clear text into the
    objects it renders (and so into the state)."""
    problems: list[tuple[tuple, str]] = []

    def walk(value: Any, path: tuple) -> None:
        if isinstance(value, dict) and set(value) == {"secure"}:
            problems.append((path, secure_value_refused(path)))
        elif isinstance(value, (dict, list)):
            for key, item in value.items() if isinstance(value, dict) else enumerate(value):
                walk(item, (*path, key))

    for key, value in stack_file_config.items():
        namespace, _, name = key.rpartition(":")
        if name not in SECRET_KEYS and namespace in ("", NAMESPACE):
            walk(value, (name,))
    return problems


def secure_value_refused(path: tuple) -> str:
    """Why a secret outside SECRET_KEYS is refused, and where it goes instead."""
    where = ("put it in trainingSecrets.<name> and name that in the job's secretEnv (the pods read it from a Secret)"
             if path[:1] == ("training",) and "env" in path else f"secure values only in {', '.join(SECRET_KEYS)}")
    return (f"a secret in {path[0]}, which is not a secret key: Pulumi then passes all of {path[0]} decrypted, and the "
            f"platform would write the value in clear text into the objects it renders and the state; allowed: {where}")
