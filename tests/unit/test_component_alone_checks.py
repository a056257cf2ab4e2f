"""A component used alone runs every stack check that concerns its inputs.

Each case below is a stack the loader's checks refuse (settings/loader.py STACK_CHECKS) and the
published components (components/__init__.py COMPONENTS) that must refuse it alone: the
platform maps the stack into each component's inputs (platform.py, the only place that does)
and each of those components' input checks (`problems`, run by settings/component_args.py
`validated`) must find a problem where the stack check does, and none in the valid base stack.
A case that no component can refuse alone says why: what it joins that no single component's
inputs hold. Every stack check has a case, so a check added to the stack without a decision
about the components fails `test_every_stack_check_has_a_case`.
"""

from __future__ import annotations

import copy
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest
import yaml

from inference_platform import COMPONENTS, platform
from inference_platform.core.chart_source import ENVIRONMENT_VARIABLE
from inference_platform.gpu.node_labels import cluster_operator_problems, contract_problems
from inference_platform.gpu.profiles import check_gpu_settings
from inference_platform.mesh.ref import MeshRef
from inference_platform.serving.llm_memory import llm_memory_problems
from inference_platform.settings import checks
from inference_platform.settings.controller_clashes import stack_controller_name_problems
from inference_platform.settings.identity import production_problems, stack_name_problems
from inference_platform.settings.loader import STACK_CHECKS, parse_settings, upload_config_problems
from inference_platform.settings.stack import SECRET_KEYS, Settings
from inference_platform.settings.training import training_section_problems
from inference_platform.timing.estimates import stack_estimates
from inference_platform.training.capacity import training_capacity_problems
from inference_platform.tuning.perf_inputs import tuned_shape_problems
from inference_platform.weights.inputs import WeightsRef
from tests.conftest import ROOT, as_magnum, base_config, clashing_deployment_names, observability_inputs
from tests.unit.test_llm_memory import stack as llm_stack

EVERY_WEIGHT = WeightsRef(claim_name="weights", s3_secret_name="s3", s3_endpoint="https://s3.example.com", s3_bucket="weights")


def component_inputs(s: Settings) -> dict[str, list]:
    """Each published component's inputs for the stack, as the platform builds them (one per
    service and graph), with the handles of the parts before them named as the platform would."""
    estimates = stack_estimates(s)
    mesh = MeshRef(tls=s.mesh.tls.enabled)
    subnet = None if s.cluster.mode == "existing" else "10.0.0.0/24"
    teams = {t.namespace: EVERY_WEIGHT for t in s.training.teams} if s.training else {}
    return {
        "Cluster": [platform.cluster_inputs(s)],
        "GpuOperator": [platform.gpu_operator_inputs(s, estimates)],
        "ColdStart": [platform.cold_start_inputs(s)],
        "Mesh": [platform.mesh_inputs(s)],
        "Observability": [observability_inputs(s)],
        "InferenceNamespaces": [platform.namespaces_inputs(s)],
        "WeightCaches": [platform.weight_caches_inputs(s, subnet, estimates)],
        "TritonService": [platform.triton_inputs(s, i, mesh, EVERY_WEIGHT, estimates) for i in range(len(s.services))],
        "InferenceGraph": [platform.graph_inputs(s, i, mesh, EVERY_WEIGHT, estimates) for i in range(len(s.graphs))],
        "ModelPipeline": [platform.pipeline_inputs(s, {svc.k8s_namespace: EVERY_WEIGHT for svc in s.services})],
        "Training": [platform.training_inputs(s, teams)] if s.training else [],
    }


def refusals(inputs) -> list:
    return inputs.problems() if hasattr(inputs, "problems") else []


@dataclass(frozen=True)
class Case:
    id: str
    check: Callable
    """The stack check that refuses the edited stack."""
    edit: Callable[[dict], None]
    """Turns the valid base stack (tests/conftest.py base_config) into one the check refuses."""
    components: tuple[str, ...] = ()
    """The components whose inputs hold every fact the check reads: each must refuse it alone."""
    stack_only: str = ""
    """Where no component can: what the check joins that no one component's inputs hold."""
    base: Callable[[], dict] = field(default=base_config)
    environ: dict = field(default_factory=dict)
    """Environment variables the check reads."""


def _set(path: str, value) -> Callable[[dict], None]:
    """An edit setting a dotted key path (list indexes as numbers) of the raw stack."""
    def edit(raw: dict) -> None:
        *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
        at = raw
        for p in parents:
            at = at.setdefault(p, {}) if isinstance(at, dict) else at[p]
        at[last] = value
    return edit


def _edits(*edits: Callable[[dict], None]) -> Callable[[dict], None]:
    def edit(raw: dict) -> None:
        for e in edits:
            e(raw)
    return edit


def _second_service(**keys) -> Callable[[dict], None]:
    def edit(raw: dict) -> None:
        svc = copy.deepcopy(raw["services"][0])
        raw["services"].append({**svc, "name": "other", "hosts": ["other.example.com"], **keys})
    return edit


def _tls_base() -> dict:
    raw = base_config()
    raw["mesh"] = {"tls": {"enabled": True, "secretName": "wildcard"}}
    return raw


def _production_base() -> dict:
    raw = _tls_base()
    raw["production"] = True
    raw["services"][0]["auth"] = {"mode": "basic"}
    return raw


def _production_graph_base() -> dict:
    """_production_base with the ensemble graph of _graph_base, with Basic Auth."""
    raw = _production_base()
    raw["graphs"] = [dict(_graph_base()["graphs"][0], auth={"mode": "basic"})]
    return raw


def _s3_base() -> dict:
    raw = base_config()
    raw["weightCaches"]["s3"] = {"endpoint": "https://s3.example.com", "bucket": "weights"}
    raw["s3AccessKeyId"], raw["s3SecretAccessKey"] = "id", "key"
    return raw


def _upload(prefix: str, source: str = "tests/data") -> dict:
    return {"source": source, "prefix": prefix}


def _receiver(name: str) -> dict:
    return {"name": name, "webhook": {}}


def _alerting(**alerting) -> Callable[[dict], None]:
    def edit(raw: dict) -> None:
        raw.setdefault("observability", {})["alerting"] = alerting
        raw["alertReceiverSecrets"] = {r["name"]: "https://hooks.example.com/x" for r in alerting.get("receivers", [])}
    return edit


def _llm_base() -> dict:
    return llm_stack(maxConcurrentSequences=32)


def _open_llm_base() -> dict:
    """An LLM service behind the OpenAI frontend, without auth."""
    return llm_stack(maxConcurrentSequences=32, openai={})


def _routed_llm_base() -> dict:
    """An LLM service behind the OpenAI frontend, with Basic Auth."""
    raw = llm_stack(maxConcurrentSequences=32, openai={})
    raw["services"][0]["auth"] = {"mode": "basic"}
    return raw


def _graph_base() -> dict:
    """base_config with studio-dev's ensemble graph on its GPU group, reading `graph` on the file share."""
    studio = yaml.safe_load((ROOT / "stacks" / "Pulumi.studio-dev.yaml").read_text())["config"]
    graph = copy.deepcopy(next(g for g in studio["inference-platform:graphs"] if g["placement"] == "ensemble"))
    for step in graph["steps"]:
        step["gpu"] = {"group": "gpu"}
        step["modelRepository"] = {"cache": "fileShare", "path": "graph"}
    raw = base_config()
    raw["graphs"] = [dict(graph, hosts=["graph.example.com"])]
    return raw


def _graph_inside_the_ensemble(raw: dict) -> None:
    inner = copy.deepcopy(raw["graphs"][0])
    for step in inner["steps"]:
        step["modelRepository"] = {"cache": "fileShare", "path": "graph/inner"}
    raw["graphs"].append(dict(inner, name="inner", hosts=["inner.example.com"]))


def _training_base() -> dict:
    raw = base_config()
    group = raw["cluster"]["nodeGroups"][1]
    group["maxNodes"], group["gpu"]["perNode"] = 8, 2
    raw["training"] = {"teams": [{"name": "ml", "namespace": "ml", "quotas": [{"group": "gpu", "gpus": 4}]}]}
    return raw


def _broken_upload(raw: dict) -> None:
    source = Path(tempfile.mkdtemp()) / "repository"
    (source / "m").mkdir(parents=True)
    (source / "m" / "config.pbtxt").write_text("max_batch_size: [")
    raw["weightCaches"]["s3"]["uploads"] = [_upload("m", str(source))]


def _tuned_without_shapes(raw: dict) -> None:
    """The service's version tuned on a model whose uploaded config has a variable input and no shape for it."""
    source = Path(tempfile.mkdtemp()) / "repository"
    (source / "m").mkdir(parents=True)
    (source / "m" / "config.pbtxt").write_text('name: "m"\ninput [{ name: "x" data_type: TYPE_FP32 dims: [ -1 ] }]\n')
    raw["weightCaches"]["s3"]["uploads"] = [_upload("svc", str(source))]
    version = raw["services"][0]["versions"][0]
    version["modelRepository"], version["tuning"] = {"cache": "s3", "path": "svc"}, {"model": "m"}


def _magnum_gpu_first() -> dict:
    raw = as_magnum(base_config())
    groups = raw["cluster"]["nodeGroups"]
    groups[1]["flavor"] = groups[0]["flavor"] = "m1.large"
    return raw


CASES = (
    Case("stack-name", stack_name_problems, _set("customer", "other"), stack_only="the stack's name, which no component has"),
    Case("production-environment", production_problems, _set("environment", "prod"),
         stack_only="the stack's environment name, which no component has"),
    Case("duplicate-node-group", checks.node_group_problems,
         lambda raw: raw["cluster"]["nodeGroups"].append(dict(raw["cluster"]["nodeGroups"][0], selector={"pool": "more"})),
         components=("Cluster",)),
    Case("existing-group-without-selector", checks.cluster_settings_problems,
         lambda raw: raw["cluster"]["nodeGroups"][0].pop("selector"), components=("Cluster",)),
    Case("gpu-group-without-os", checks._node_os_problems, lambda raw: raw["cluster"]["nodeGroups"][1].pop("os"),
         stack_only="the cluster's mode and Magnum template (the OS of a group that names none), which GpuOperator "
                    "does not take, beside the GPU operator's driver mode, which Cluster does not"),
    Case("gpu-quota", checks.capacity_problems, _set("cluster.gpuQuota", 1), components=("Cluster",)),
    Case("spare-slots-on-no-gpu-group", checks.capacity_problems, _set("coldStart.spareSlots", {"cpu": 1}),
         components=("ColdStart",)),
    Case("anonymous-kiali-in-production", checks.platform_part_problems, _set("mesh.kialiAuth", "anonymous"),
         components=("Mesh",), base=_production_base),
    Case("token-kiali-on-a-host-in-production", checks.platform_part_problems,
         _set("ui.kiali", {"host": "kiali.example.com"}), components=("Mesh",), base=_production_base),
    Case("loki-on-s3-without-s3", checks.platform_part_problems, _set("observability.lokiStorage", "s3"),
         components=("Observability",)),
    Case("loki-bucket-name", checks.platform_part_problems,
         _edits(_set("observability.lokiStorage", "s3"), _set("weightCaches.s3.bucket", "w" * 60)),
         components=("Observability",), base=_s3_base),
    Case("adopted-bucket-force-destroyed", checks.platform_part_problems,
         _edits(_set("weightCaches.s3.adopt", True), _set("weightCaches.s3.forceDestroy", True)),
         components=("WeightCaches",), base=_s3_base),
    Case("s3-without-keys", checks.platform_part_problems, lambda raw: raw.pop("s3SecretAccessKey"),
         components=("WeightCaches",), base=_s3_base),
    Case("plain-http-ui-in-production", checks._ui_problems, _set("ui.allowPlainHttp", True),
         components=("Mesh",), base=_production_base),
    Case("ui-login-without-tls", checks._ui_problems, _set("ui.kiali", {"host": "kiali.example.com"}),
         components=("Mesh",)),
    Case("ui-host-of-a-service", checks._ui_problems, _set("ui.kiali", {"host": "svc.example.com"}),
         components=("Mesh",), base=_tls_base),
    Case("oidc-secret-without-oidc", checks._ui_problems, _set("grafanaOidcClientSecret", "s"),
         components=("Observability",)),
    Case("plain-http-credentials-opted-in-production", checks.credentials_in_clear_problems,
         _set("mesh.allowPlainHttpCredentials", True), components=("Mesh",), base=_production_base),
    Case("basic-without-tls-in-production", checks.credentials_in_clear_problems, _set("mesh.tls", {"enabled": False}),
         components=("TritonService",), base=_production_base),
    Case("graph-basic-without-tls-in-production", checks.credentials_in_clear_problems, _set("mesh.tls", {"enabled": False}),
         components=("InferenceGraph",), base=_production_graph_base),
    Case("duplicate-receiver", checks.alerting_problems, _alerting(receivers=[_receiver("ops"), _receiver("ops")]),
         components=("Observability",)),
    Case("receiver-named-null", checks.alerting_problems, _alerting(receivers=[_receiver("null")]),
         components=("Observability",)),
    Case("routed-to-no-receiver", checks.alerting_problems, _alerting(receivers=[_receiver("ops")], critical=["pager"]),
         components=("Observability",)),
    Case("receiver-secret-without-receiver", checks.alerting_problems, _set("alertReceiverSecrets", {"ops": "x"}),
         components=("Observability",)),
    Case("unknown-upload-preset", checks.tuning_problems,
         _set("weightCaches.s3.uploads", [dict(_upload("m"), presets=["nope"])]),
         components=("WeightCaches",), base=_s3_base),
    Case("pipeline-without-argo", checks.tuning_problems,
         _set("services.0.pipeline", {"baseVersion": "v1", "model": "m", "inputs": {"x": [1]}, "repositoryPrefix": "svc"}),
         stack_only="whether the stack installs Argo (modelPipeline.enabled): a ModelPipeline used alone installs it"),
    Case("duplicate-service-name", checks.served_problems, _second_service(name="svc"),
         stack_only="the names of every service and graph, each a component of its own"),
    Case("reserved-namespace", checks.served_problems, _set("services.0.namespace", "kube-public"),
         components=("TritonService",)),
    Case("auth-none-in-production", checks.served_problems, _set("services.0.auth", {"mode": "none"}),
         components=("TritonService",), base=_production_base),
    Case("graph-auth-none-in-production", checks.served_problems, _set("graphs.0.auth", {"mode": "none"}),
         components=("InferenceGraph",), base=_production_graph_base),
    Case("jwt-without-audiences-in-production", checks.served_problems,
         _set("services.0.auth", {"mode": "jwt", "jwt": {"issuer": "https://id.example.com", "jwksUri": "https://id.example.com/jwks"}}),
         components=("TritonService",), base=_production_base),
    Case("cache-not-configured", checks.served_problems, _set("services.0.versions.0.modelRepository.cache", "s3"),
         stack_only="the stack's caches (WeightCaches) beside what a service reads (TritonService); a TritonService "
                    "alone refuses a cache its `weights` handle does not name"),
    Case("version-weights", checks.served_problems, _set("services.0.versions.0.weight", 50), components=("TritonService",)),
    Case("pipeline-base-version", checks.tuning_problems, _edits(
        _set("modelPipeline.enabled", True),
        _set("services.0.pipeline", {"baseVersion": "v9", "model": "m", "inputs": {"x": [1]}, "repositoryPrefix": "svc"})),
        components=("ModelPipeline",)),
    Case("derived-name-clash", checks.derived_name_clashes, _edits(
        _set("services.0.versions.0.tuning", {"model": "m"}), _second_service(name="svc-tuning")),
        stack_only="one service's derived names against another service's name"),
    Case("upload-prefixes-nest", checks.upload_prefix_problems,
         _set("weightCaches.s3.uploads", [_upload("models"), _upload("models/a")]),
         components=("WeightCaches",), base=_s3_base),
    Case("graph-repository-inside-an-ensemble", checks.graph_repository_problems, _graph_inside_the_ensemble,
         stack_only="one graph's repository against another graph's", base=_graph_base),
    Case("graph-in-a-reserved-namespace", checks.served_problems, _set("graphs.0.namespace", "kube-public"),
         components=("InferenceGraph",), base=_graph_base),
    Case("graph-step-on-no-gpu-group", checks.served_problems, _set("graphs.0.steps.0.gpu.group", "cpu"),
         components=("InferenceGraph",), base=_graph_base),
    Case("chart-directory-override", checks.chart_directory_override_problems, lambda raw: None,
         stack_only="the environment of the run, read where each release finds its chart",
         environ={ENVIRONMENT_VARIABLE: "/nonexistent/charts"}),
    Case("gpu-default-worker-group", check_gpu_settings,
         lambda raw: raw["cluster"]["nodeGroups"].reverse(), components=("Cluster",), base=_magnum_gpu_first),
    Case("compiled-driver-branch", check_gpu_settings, _set("gpuOperator.driver", {"mode": "compiled", "branch": "535"}),
         components=("GpuOperator",)),
    Case("mig-profile-not-in-the-group", check_gpu_settings, _edits(
        _set("cluster.nodeGroups.1.gpu.sharing", {"mode": "mig", "migProfile": "all-1g.10gb"}),
        _set("services.0.versions.0.gpu.migProfile", "3g.40gb")), components=("TritonService",)),
    Case("minimum-replicas-over-the-groups", check_gpu_settings, _edits(
        _set("services.0.autoscaling", {"minReplicas": 3, "maxReplicas": 3}), _second_service()),
        stack_only="the minimum replicas of every service on a group, each service a component of its own"),
    Case("llm-does-not-fit", llm_memory_problems, _set("services.0.versions.0.llm.maxConcurrentSequences", 4096),
         components=("TritonService",), base=_llm_base),
    Case("nfd-label-key", contract_problems,
         _set("cluster.nodeGroups.1.labels", {"kubernetes.io/role": "x"}), components=("GpuOperator",)),
    Case("capi-helm-operator-values", cluster_operator_problems, _edits(
        _set("cluster.magnum.clusterApiDriver", "magnum-capi-helm"),
        _set("cluster.nodeGroups.1.gpu.sharing", {"mode": "time-slicing", "replicas": 2})),
        components=("GpuOperator",), base=_magnum_gpu_first),
    Case("broken-upload-config", upload_config_problems, _broken_upload, components=("WeightCaches",), base=_s3_base),
    Case("tuned-shapes", tuned_shape_problems, _tuned_without_shapes, base=_s3_base,
         stack_only="a service's tuning shapes (TritonService) against the config its upload carries (WeightCaches)"),
    Case("deployment-name-clash", checks.deployment_name_clashes, lambda raw: raw.update(clashing_deployment_names()),
         stack_only="one service's Deployment names against another's"),
    Case("llm-basic-auth-reach", checks.llm_basic_auth_problems, _set("mesh.enabled", False), base=_routed_llm_base,
         stack_only="whether istio-system holds the platform's mesh or the cluster's own (mesh.enabled), which a MeshRef "
                    "does not say; TritonService runs the same check on its mesh's ingress namespace"),
    Case("training-section", training_section_problems, _set("trainingSecrets", {"unused": "x"}),
         components=("Training",), base=_training_base),
    Case("controller-name-clash", stack_controller_name_problems, _set("services.0.versions.0.name", "istio"),
         components=("TritonService",), base=_open_llm_base),
    Case("llm-gateway-annotations", checks.llm_gateway_annotations_problems,
         _set("mesh.gatewayAnnotations", {"gateway.networking.k8s.io/x": "y"}),
         components=("TritonService",), base=_open_llm_base),
    Case("training-capacity", training_capacity_problems, _set("training.teams.0.quotas.0.gpus", 15), base=_training_base,
         stack_only="the serving peak of every service beside the training teams' quotas"),
)


def _run(check: Callable, settings: Settings) -> list:
    # The stack name's check takes the stack's name too: base_config is stack test-dev.
    return check(settings, "test-dev") if check is stack_name_problems else check(settings)


def _refused_stack(case: Case, monkeypatch) -> Settings:
    raw = case.base()
    parse_settings(copy.deepcopy(raw), "base", frozenset(SECRET_KEYS))  # the base passes every check
    case.edit(raw)
    for name, value in case.environ.items():
        monkeypatch.setenv(name, value)
    settings = Settings.model_validate(raw)
    assert _run(case.check, settings), f"{case.id}: the stack check does not refuse the edited stack"
    return settings


ALONE = [(case, component) for case in CASES for component in case.components]


@pytest.mark.parametrize("case,component", ALONE, ids=[f"{c.id}-{n}" for c, n in ALONE])
def test_a_component_alone_refuses_what_the_stack_refuses_of_its_inputs(case, component, monkeypatch):
    base = parse_settings(case.base(), "base", frozenset(SECRET_KEYS))
    assert all(not refusals(i) for i in component_inputs(base)[component]), f"{component} refuses the valid base stack"
    inputs = component_inputs(_refused_stack(case, monkeypatch))[component]
    assert inputs and any(refusals(i) for i in inputs), (
        f"{component} used alone accepts what {case.check.__name__} refuses ({case.id})")


@pytest.mark.parametrize("case", [c for c in CASES if not c.components], ids=lambda c: c.id)
def test_a_stack_only_check_says_what_it_joins_and_refuses_its_case(case, monkeypatch):
    assert case.stack_only, f"{case.id}: no component refuses it alone and no reason says why"
    _refused_stack(case, monkeypatch)


def test_every_stack_check_has_a_case():
    checks = {check for stage in STACK_CHECKS for check in stage} | {stack_name_problems}
    covered = {case.check for case in CASES}
    assert not checks - covered, f"stack checks with no case: {sorted(c.__name__ for c in checks - covered)}"


def test_every_component_that_takes_a_stack_section_has_a_case():
    refusing = {component for case in CASES for component in case.components}
    # InferencePlatform runs the stack's checks themselves; InferenceNamespaces takes only names.
    assert set(COMPONENTS) - refusing == {"InferencePlatform", "InferenceNamespaces"}
