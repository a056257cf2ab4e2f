"""What InferenceNamespaces, TritonService and InferenceGraph take: their settings and the names
they consume, the mesh and the weight caches as one handle each (`MeshRef`, `WeightsRef`)."""

from __future__ import annotations

from typing import Annotated, Optional

from pydantic import AfterValidator, Field, field_validator

from inference_platform.core.endpoints import ISTIO_NAMESPACE
from inference_platform.core.input_types import NameInput, namespaced_ref
from inference_platform.mesh.ref import MeshRef
from inference_platform.serving.llm_memory import service_llm_memory_problems
from inference_platform.serving.model_config import ModelConfigError, parse_model_config
from inference_platform.settings.base import DnsLabel, Model, TritonModelName
from inference_platform.settings.checks import credential_in_clear_problems, production_auth_problems, reserved_namespace_problems
from inference_platform.settings.cluster import NodeGroup
from inference_platform.settings.controller_clashes import controller_name_problems
from inference_platform.settings.errors import KeyPath
from inference_platform.settings.graphs import Graph, graph_problems
from inference_platform.settings.mesh import llm_gateway_annotation_problems
from inference_platform.settings.serving import Service, llm_basic_auth_reach_problems, service_problems
from inference_platform.timing.estimates import GroupEstimate
from inference_platform.weights.inputs import WeightsRef, missing_weights


def production_auth_checks(item: Service | Graph, production: bool, mesh: MeshRef) -> list[tuple[KeyPath, str]]:
    """The stack's production checks of a service's or graph's auth, on the component's own
    `production` and mesh (settings/checks.py served_problems and credentials_in_clear_problems)."""
    return production_auth_problems(item, production) + credential_in_clear_problems(
        item, production, mesh.tls, "mesh.tls: true, a gateway that serves the hosts over HTTPS")


class InferenceNamespacesInputs(Model):
    """Namespaces of the inference services: sidecar injection and STRICT mTLS for everything in them."""

    namespaces: list[DnsLabel] = []
    """Namespace names, each created once."""


def _model_config_text(text: str) -> str:
    try:
        parse_model_config(text, "config.pbtxt")
    except ModelConfigError as err:
        raise ValueError(err.reason) from None  # the key path names the model
    return text


ModelConfigText = Annotated[str, AfterValidator(_model_config_text)]


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
    production: bool = False
    """A production stack: auth mode `none` is refused, and so are `basic` and `jwt` unless `mesh.tls` (their clients' credentials would cross the network in clear)."""
    tuning_priority_class: Optional[NameInput] = None
    """PriorityClass of the versions' tuning runs (the platform's `gpu-tuning`: below serving, preempting nothing); without one a run has the default priority, so a serving replica cannot preempt it (docs/tuning.md)."""
    gateway_tls_secret: Optional[Annotated[str, AfterValidator(namespaced_ref)]] = None
    """`<namespace>/<name>` of the TLS Secret an LLM service's Gateway serves HTTPS with (the platform's: the ingress gateway's, `mesh.tls.secretName`); none serves HTTP."""
    gateway_annotations: dict[str, str] = {}
    """Annotations of the LoadBalancer Service istiod deploys for an LLM service's Gateway (the platform's: `mesh.gatewayAnnotations`), given as the Gateway's `spec.infrastructure.annotations`: at most 8, none under `gateway.networking.k8s.io/`."""
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
        found += [(("service", *path), why) for path, why in reserved_namespace_problems(self.service)]
        found += [(("service", *path), why) for path, why in production_auth_checks(self.service, self.production, self.mesh)]
        found += [(("service", *path), why) for path, why in service_llm_memory_problems(self.service, self.gpu_groups)]
        # The objects istiod and the router releases make for this service (settings/controller_clashes.py).
        found += [(("service", *path[2:]), why) for path, why in controller_name_problems([self.service])]
        if self.service.llm_routed:
            found += llm_gateway_annotation_problems(self.gateway_annotations, ("gateway_annotations",))
        # The stack's llm_basic_auth_problems on this component's mesh: the Basic Auth filter and
        # policy go into mesh.ingress_namespace, which reaches an LLM service's own Gateway only
        # when it is Istio's root namespace (istio-system, Istio's default meshConfig.rootNamespace).
        ingress = self.mesh.ingress_namespace
        found += [(("service", *path), why) for path, why in llm_basic_auth_reach_problems(
            self.service, ingress == ISTIO_NAMESPACE,
            f"mesh.ingress_namespace {ISTIO_NAMESPACE!r}, Istio's root namespace (not {ingress!r})")]
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
    cold_start: list[GroupEstimate] = []
    """Per GPU group, the cold-start estimate: how long `pulumi up` waits for a Ray graph's new RayCluster to take over (default: the platform's stage times)."""
    mesh: MeshRef = MeshRef()
    """The mesh the graph is served through (`Mesh.reference`): Gateway, ingress, monitoring, TLS."""
    production: bool = False
    """A production stack: auth mode `none` is refused, and so are `basic` and `jwt` unless `mesh.tls` (their clients' credentials would cross the network in clear)."""

    def problems(self) -> list[tuple[KeyPath, str]]:
        """The stack file's checks of one graph and its namespace, and that `weights` names what each step's cache needs."""
        found = [(("graph", *path), why) for path, why in graph_problems(self.graph, {g.name: g for g in self.gpu_groups})]
        found += [(("graph", *path), why) for path, why in reserved_namespace_problems(self.graph)]
        found += [(("graph", *path), why) for path, why in production_auth_checks(self.graph, self.production, self.mesh)]
        return found + missing_weights(self.weights, ((("graph", "steps", si), step.model_repository)
                                                      for si, step in enumerate(self.graph.steps)))
