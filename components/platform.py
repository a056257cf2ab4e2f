"""InferencePlatform: maps a stack's settings to each component's arguments and composes them.

This is the only module that sees the whole stack's `Settings` and the only one that
knows the order in which parts are built: cluster -> (kubernetes Provider) -> mesh ->
observability -> GPU stack -> inference namespaces -> weight caches -> Triton services ->
inference graphs (with the KubeRay operator for those on Ray) -> the model pipeline (Argo Workflows) ->
Kueue and the training queues.
Each component gets its own inputs (components/<package>/inputs.py): its settings and the names
it consumes from the parts before it. Build order only makes handles available; `pulumi
up` orders by dependencies: each component `dependsOn` the parts it needs (the GPU
operator after the monitoring CRDs, inference namespaces after istiod), which
platformctl/ordering.py checks on every plan.
"""


import math
from typing import Optional, Union

import pulumi
import pulumi_kubernetes as kubernetes

from inference_platform.args import InferencePlatformArgs
from inference_platform.cluster import autoscaler
from inference_platform.cluster.cluster import Cluster
from inference_platform.cluster.inputs import ClusterInputs
from inference_platform.core import chart_source, versions
from inference_platform.core import endpoints as ep
from inference_platform.core.common import descendants, helm_release, init_component
from inference_platform.gpu.coldstart import ColdStart
from inference_platform.gpu.first_up import first_up_estimates
from inference_platform.gpu.inputs import ColdStartInputs, GpuOperatorInputs
from inference_platform.gpu.operator import GpuOperator
from inference_platform.mesh.inputs import MeshInputs
from inference_platform.mesh.mesh import Mesh, service_hosts
from inference_platform.mesh.ref import MeshRef
from inference_platform.observability.inputs import ObservabilityInputs
from inference_platform.observability.observability import Observability
from inference_platform.serving.graphs import InferenceGraph, kuberay_isolation, kuberay_operator_values
from inference_platform.serving.inputs import InferenceGraphInputs, InferenceNamespacesInputs, TritonServiceInputs
from inference_platform.serving.namespaces import InferenceNamespaces
from inference_platform.serving.triton import TritonService
from inference_platform.settings.component_args import M
from inference_platform.settings.loader import parse_settings
from inference_platform.settings.stack import SECRET_KEYS, Settings
from inference_platform.settings.training_publish import PipelineRef, pipeline_refs
from inference_platform.timing.estimates import GroupEstimate, gpu_node_ready_seconds
from inference_platform.timing.readiness import cluster_upgrade_budget
from inference_platform.training.capacity import group_proofs
from inference_platform.training.inputs import TrainingInputs, cache_namespaces, checkpoint_directories
from inference_platform.training.install import install_trainer
from inference_platform.training.kueue import TEAM_QUEUE_PREFIX, TRAINING_PRIORITY_CLASS, KueueResources, kueue_resources
from inference_platform.training.training import Training, team_namespace
from inference_platform.tuning.inputs import ModelPipelineInputs
from inference_platform.tuning.pipeline import ModelPipeline
from inference_platform.weights.caches import WeightCaches, namespaces_using
from inference_platform.weights.inputs import WeightCachesInputs, WeightsRef


def _given(model: type[M], **values) -> M:
    """`model` of the values the stack sets: an unset one (None) keeps the model's default,
    as a key left out of a stack file does (the models refuse null)."""
    return model(**{key: value for key, value in values.items() if value is not None})


def cluster_inputs(s: Settings) -> ClusterInputs:
    upgrade = cluster_upgrade_budget(s)
    return _given(ClusterInputs, cluster=s.cluster, production=s.production, kubeconfig=s.kubeconfig,
                  gpu_node_ready_seconds=gpu_node_ready_seconds(s),
                  upgrade_seconds=upgrade.update_seconds if upgrade else None)


def gpu_operator_inputs(s: Settings, estimates: list[GroupEstimate]) -> GpuOperatorInputs:
    return _given(GpuOperatorInputs, gpu_operator=s.gpu_operator, node_groups=s.cluster.node_groups,
                  magnum_labeller=s.cluster.magnum_labeller, cold_start=estimates,
                  system_node_selector=s.cluster.system_selector)


def cold_start_inputs(s: Settings) -> ColdStartInputs:
    # GPU feature discovery labels a node once its driver works wherever a GPU operator runs: the
    # platform's, or the one magnum-capi-helm installs, which the platform's settings stand for.
    return ColdStartInputs(cold_start=s.cold_start, gpu_groups=s.gpu_groups, services=s.workloads,
                           pull_after_driver=s.gpu_operator.enabled)


def mesh_inputs(s: Settings) -> MeshInputs:
    routed = [*s.services, *s.graphs]
    # An LLM service has a Gateway of its own (serving/llm_routing.py), not a server on the customer Gateway.
    classic = [*(svc for svc in s.services if not svc.llm_routed), *s.graphs]
    return _given(MeshInputs, mesh=s.mesh, ui=s.ui, hosts=service_hosts(classic), production=s.production,
                  gateway_api=any(svc.llm_routed for svc in s.services),
                  storage_class=s.observability.storage_class, node_boot_seconds=s.cold_start.stage_seconds.node_boot,
                  request_timeout_seconds=max([60, *(math.ceil(w.timeout_seconds) for w in routed)]),
                  system_node_selector=s.cluster.system_selector)


def observability_inputs(s: Settings, mesh: Mesh, estimates: list[GroupEstimate]) -> ObservabilityInputs:
    return _given(
        ObservabilityInputs,
        observability=s.observability, ui=s.ui, production=s.production, services=s.services, graphs=s.graphs,
        gpu_groups=s.gpu_groups, tls=s.mesh.tls.enabled, mesh_installed=mesh.crds is not None,
        mesh_urls=mesh.urls, ui_urls=mesh.ui_urls, weights_s3=s.weight_caches.s3,
        s3_access_key_id=s.s3_access_key_id, s3_secret_access_key=s.s3_secret_access_key,
        grafana_oidc_client_secret=s.grafana_oidc_client_secret, alert_receiver_secrets=s.alert_receiver_secrets,
        cold_start=estimates, autoscaler_installed=autoscaler.deployed(s.cluster),
        training_namespaces=sorted({t.namespace for t in s.training.teams}) if s.training else [],
        training_cluster_queues=sorted(TEAM_QUEUE_PREFIX + t.name for t in s.training.teams) if s.training else [],
        system_node_selector=s.cluster.system_selector,
    )


def ray_graphs(s: Settings) -> list:
    return [g for g in s.graphs if g.placement == "ray"]


def namespaces_inputs(s: Settings) -> InferenceNamespacesInputs:
    # The KubeRay operator runs in the mesh too: its calls to the Ray heads carry its identity.
    operator = {ep.RAY_NAMESPACE} if ray_graphs(s) else set()
    return InferenceNamespacesInputs(
        namespaces=sorted({svc.k8s_namespace for svc in s.services} | {g.k8s_namespace for g in s.graphs} | operator))


def weight_caches_inputs(s: Settings, subnet_cidr, estimates: list[GroupEstimate],
                         namespaces: Optional[dict[str, pulumi.Resource]] = None) -> WeightCachesInputs:
    # Names as the Namespaces output them: each claim and Secret waits for its namespace only.
    # Training teams' namespaces get the caches their jobs read or write.
    def using(cache: str) -> list[str]:
        teams = cache_namespaces(s.training, cache) if s.training is not None else []
        return sorted({*namespaces_using(s.services, cache, s.graphs), *teams})

    return _given(
        WeightCachesInputs,
        weight_caches=s.weight_caches, production=s.production,
        file_share_namespaces=using("fileShare"),
        # Team namespaces read the share; they write only their jobs' checkpoint directories.
        read_only_namespaces=sorted({t.namespace for t in s.training.teams}) if s.training else [],
        writable_directories=checkpoint_directories(s.training) if s.training else {},
        s3_namespaces=using("s3"),
        s3_access_key_id=s.s3_access_key_id, s3_secret_access_key=s.s3_secret_access_key,
        node_groups=s.cluster.node_groups, subnet_cidr=subnet_cidr, cold_start=estimates,
        namespace_names={ns: n.metadata["name"] for ns, n in (namespaces or {}).items()},
        tuning_presets=s.tuning_presets, system_node_selector=s.cluster.system_selector,
    )


def triton_inputs(s: Settings, index: int, mesh: MeshRef, weights: WeightsRef,
                  estimates: list[GroupEstimate],
                  tuning_priority_class: Optional[pulumi.Input[str]] = None) -> TritonServiceInputs:
    svc = s.services[index]
    used = {v.gpu.group for v in svc.versions}
    tls = s.mesh.tls
    return _given(
        TritonServiceInputs,
        service=svc, gpu_groups=[g for g in s.gpu_groups if g.name in used], weights=weights,
        cold_start=[e for e in estimates if e.group in used], mesh=mesh, production=s.production,
        tuning_priority_class=tuning_priority_class,
        gateway_tls_secret=f"{ep.ISTIO_NAMESPACE}/{tls.secret_name}" if svc.llm_routed and tls.enabled else None,
        gateway_annotations=dict(s.mesh.gateway_annotations) if svc.llm_routed else {},
    )


def graph_inputs(s: Settings, index: int, mesh: MeshRef, weights: WeightsRef,
                 estimates: list[GroupEstimate]) -> InferenceGraphInputs:
    graph = s.graphs[index]
    used = {step.gpu.group for step in graph.steps}
    return InferenceGraphInputs(
        graph=graph, gpu_groups=[g for g in s.gpu_groups if g.name in used], weights=weights, mesh=mesh,
        production=s.production, cold_start=[e for e in estimates if e.group in used],
    )


def pipeline_inputs(s: Settings, weights: dict[str, WeightsRef],
                    priority_class: Optional[pulumi.Input[str]] = None) -> ModelPipelineInputs:
    services = [svc for svc in s.services if svc.pipeline is not None]
    used = {v.gpu.group for svc in services for v in svc.versions if v.name == svc.pipeline.base_version}
    return _given(
        ModelPipelineInputs,
        services=services, gpu_groups=[g for g in s.gpu_groups if g.name in used],
        weights={svc.k8s_namespace: weights[svc.k8s_namespace] for svc in services}, priority_class=priority_class,
        system_node_selector=s.cluster.system_selector, submitters=s.model_pipeline.submitters,
    )


def training_inputs(s: Settings, weights: dict[str, WeightsRef]) -> TrainingInputs:
    return _given(TrainingInputs, training=s.training, gpu_groups=s.gpu_groups, weights=weights,
                  create_namespaces=False, install_trainer=False, priority_class=TRAINING_PRIORITY_CLASS,
                  system_node_selector=s.cluster.system_selector, pipelines=published_pipelines(s),
                  secrets=s.training_secrets, production=s.production)


def published_pipelines(s: Settings) -> dict[str, PipelineRef]:
    """The model pipelines training jobs publish to (`publishTo.service`)."""
    used = {j.publish_to.service for j in (s.training.jobs if s.training else []) if j.publish_to is not None}
    return {svc: ref for svc, ref in pipeline_refs(s).items() if svc in used}


def _settings(args: Union[Settings, InferencePlatformArgs]) -> Settings:
    if isinstance(args, Settings):
        return args
    # Hosted from another language: the same checks as a stack file, named by the component.
    # Secrets arrive as the caller's secret values: none is refused as a plain one.
    return parse_settings(dict(args), "InferencePlatformArgs", frozenset(SECRET_KEYS))


class InferencePlatform(pulumi.ComponentResource):
    """The whole platform of one stack: cluster, GPU stack, mesh, observability, weight caches and Triton services."""

    kubeconfig: Optional[pulumi.Output[str]]
    """Secret. kubeconfig of the cluster (a Magnum cluster's, or the one given)."""
    urls: pulumi.Output[dict[str, str]]
    """In-cluster URLs of Grafana, Prometheus, Kiali and Jaeger."""

    def __init__(self, name: str, args: InferencePlatformArgs, opts: Optional[pulumi.ResourceOptions] = None):
        settings = _settings(args)
        chart_source.use_directory(settings.chart_directory)
        init_component(self, "InferencePlatform", name, opts)
        self.settings = settings
        child = pulumi.ResourceOptions(parent=self)
        self.outputs: dict[str, pulumi.Input] = {}
        # Each GPU group's estimate with its first `up`, which the Triton create waits allow for.
        estimates = list(first_up_estimates(settings).values())

        self.cluster = Cluster(f"{name}-cluster", cluster_inputs(settings), opts=child)
        self.kubeconfig = self.cluster.kubeconfig
        if self.kubeconfig is not None:
            self.outputs["kubeconfig"] = self.kubeconfig
        k8s = pulumi.ResourceOptions(parent=self, providers={"kubernetes": self.cluster.provider})

        def after(*deps: Optional[pulumi.Resource]) -> pulumi.ResourceOptions:
            return pulumi.ResourceOptions.merge(k8s, pulumi.ResourceOptions(depends_on=[d for d in deps if d is not None]))

        self.mesh = Mesh(f"{name}-mesh", mesh_inputs(settings), opts=k8s)
        self.observability = Observability(
            f"{name}-observability", observability_inputs(settings, self.mesh, estimates), opts=k8s,
            metrics_adapter_later=True)
        self.outputs["urls"] = self.observability.urls
        if self.observability.ui_urls:
            # What a browser opens: the UIs served through the ingress gateway (`ui` settings).
            self.outputs["uiUrls"] = self.observability.ui_urls
        if self.observability.grafana_admin_password is not None:
            self.outputs["grafanaAdminPassword"] = self.observability.grafana_admin_password
        # GPU stack: the operator after the ServiceMonitor CRD it uses.
        self.gpu_operator = (
            GpuOperator(f"{name}-gpu", gpu_operator_inputs(settings, estimates), opts=after(self.observability.crds))
            if settings.gpu_operator.enabled else None
        )
        # GPU workloads after the Magnum node groups exist: their waits (the cold-start budgets) count a
        # node's start on a group that is there, not the group's creation as well.
        gpu_nodes = self.cluster.node_groups
        self.cold_start = (ColdStart(f"{name}-coldstart", cold_start_inputs(settings), opts=after(*gpu_nodes))
                           if settings.gpu_groups else None)
        # Inference namespaces: after istiod, so every pod in them is injected.
        self.namespaces = InferenceNamespaces(
            f"{name}-namespaces", namespaces_inputs(settings), opts=after(self.mesh.injector, self.mesh.crds))
        # Training teams' namespaces, before the weight caches' claims and Secrets in them.
        self.team_namespaces = {
            t.namespace: team_namespace(f"{name}-team-{t.name}", t, k8s) for t in settings.training.teams
        } if settings.training is not None else {}
        self.weights = WeightCaches(
            f"{name}-weights",
            weight_caches_inputs(settings, self.cluster.subnet_cidr, estimates,
                                 {**self.namespaces.namespaces, **self.team_namespaces}), opts=k8s)
        # Where services and graphs are served: the gateway, its ingress, the monitoring namespace, TLS.
        self.mesh_ref = self.mesh.reference(self.observability.namespace)
        self.services: dict[str, TritonService] = {}
        for index, svc in enumerate(settings.services):
            ns = svc.k8s_namespace
            deps = [self.namespaces.namespaces[ns], self.mesh.crds, self.observability.crds,
                    *self.weights.depends_on(ns), self.gpu_operator.release if self.gpu_operator else None,
                    *(self.mesh.gateway_api_crds if svc.llm_routed else ()), *gpu_nodes]
            tuning = self.cold_start.tuning_priority_class if self.cold_start else None
            service_inputs = triton_inputs(settings, index, self.mesh_ref, self.weights.reference(ns), estimates,
                                           tuning.metadata["name"] if tuning else None)
            self.services[svc.name] = TritonService(svc.name, service_inputs, opts=after(*deps))
        self.graphs = self._graphs(name, settings, after, estimates)
        self.pipeline = self._pipeline(name, settings, after) if settings.model_pipeline.enabled else None
        # Kueue before the TrainJobs: its webhook suspends a job until its queue admits it, so a job
        # created before Kueue runs would start unqueued, outside the serving-first proof.
        # Trainer before Kueue: Kueue sets up its TrainJob integration only if Trainer's CRDs exist when
        # it starts (kueue v0.19.2 pkg/controller/jobframework/setup.go); JobSet's chart declares a
        # ServiceMonitor, so after the monitoring CRDs.
        self.trainer = (install_trainer(self, f"{name}-training", settings.cluster.system_selector,
                                        provider=self.cluster.provider,
                                        depends_on=[d for d in (self.observability.crds,) if d is not None])
                        if settings.training is not None else None)
        self.kueue = self._kueue(name, settings) if settings.training is not None else None
        self.training = self._training(name, settings, after) if settings.training is not None else None
        # What a team's own program needs to add a service to this platform (examples/team-service-stackref).
        self.outputs["serving"] = {
            **self.mesh_ref.model_dump(by_alias=True),
            "weights": {ns: self.weights.reference(ns).model_dump(by_alias=True, exclude_none=True)
                        for ns in sorted(self.namespaces.namespaces)},
        }
        if self.graphs:
            self.outputs["graphs"] = {g: {"urls": c.urls, "credentials": c.credentials} for g, c in self.graphs.items()}
        if self.pipeline is not None:
            self.outputs["workflowTemplates"] = self.pipeline.workflow_templates
        if self.training is not None:
            self.outputs["training"] = {"runtimes": self.training.runtimes, "jobs": self.training.jobs}
        self.outputs["services"] = {
            svc_name: {"urls": t.urls, "weights": t.weights, "authSecret": t.auth_secret, "credentials": t.credentials}
            for svc_name, t in self.services.items()
        }
        self.urls = self.observability.urls
        # The metrics adapter last, after every namespace: on destroy its APIService goes first, so no
        # namespace waits on an aggregated API that no longer answers.
        self.observability.install_metrics_adapter(
            [r for r in descendants(self) if isinstance(r, kubernetes.core.v1.Namespace)])
        self.register_outputs(self.outputs)

    def _graphs(self, name: str, settings: Settings, after, estimates: list[GroupEstimate]) -> dict[str, InferenceGraph]:
        """The inference graphs, and for those on Ray the KubeRay operator (its chart installs the CRDs)."""
        operator = None
        if ray_graphs(settings):
            ray_ns = self.namespaces.namespaces[ep.RAY_NAMESPACE]
            operator = helm_release(
                f"{name}-kuberay", versions.KUBERAY_OPERATOR.name, versions.KUBERAY_OPERATOR, ep.RAY_NAMESPACE,
                kuberay_operator_values(settings.cluster.system_selector), after(ray_ns))
            kuberay_isolation(f"{name}-kuberay", after(ray_ns, self.mesh.crds))
        graphs: dict[str, InferenceGraph] = {}
        for index, graph in enumerate(settings.graphs):
            ns = graph.k8s_namespace
            deps = [self.namespaces.namespaces[ns], self.mesh.crds, self.observability.crds, *self.weights.depends_on(ns),
                    *self.cluster.node_groups, self.gpu_operator.release if self.gpu_operator else None,
                    operator if graph.placement == "ray" else None]
            graph_args = graph_inputs(settings, index, self.mesh_ref, self.weights.reference(ns), estimates)
            graphs[graph.name] = InferenceGraph(graph.name, graph_args, opts=after(*deps))
        return graphs

    def _kueue(self, name: str, settings: Settings) -> KueueResources:
        """Kueue and the teams' queues, with the quotas of the serving-first proof the loader checked."""
        # After the monitoring CRDs: the chart declares a ServiceMonitor.
        return kueue_resources(self, settings.training, group_proofs(settings), settings.gpu_groups, self.team_namespaces,
                               name=name, depends_on=[d for d in (self.observability.crds, self.trainer) if d is not None],
                               system_node_selector=settings.cluster.system_selector, provider=self.cluster.provider)

    def _pipeline(self, name: str, settings: Settings, after) -> ModelPipeline:
        """Argo Workflows and the services' pipelines, after the namespaces, weight caches and
        priority class their templates use."""
        namespaces = sorted({svc.k8s_namespace for svc in settings.services if svc.pipeline is not None})
        priority = self.cold_start.tuning_priority_class if self.cold_start else None
        args = pipeline_inputs(settings, {ns: self.weights.reference(ns) for ns in namespaces},
                               priority.metadata["name"] if priority else None)
        deps = [d for ns in namespaces for d in (self.namespaces.namespaces[ns], *self.weights.depends_on(ns))]
        return ModelPipeline(f"{name}-pipeline", args, opts=after(*deps, self.observability.crds))

    def _training(self, name: str, settings: Settings, after) -> Training:
        """Kubeflow Trainer and the teams' jobs, after the teams' namespaces and their weight caches."""
        namespaces = sorted(self.team_namespaces)
        deps = [d for ns in namespaces for d in (self.team_namespaces[ns], *self.weights.depends_on(ns))]
        queues = [self.kueue.release, self.kueue.priority_class, *self.kueue.local_queues.values()] if self.kueue else []
        args = training_inputs(settings, {ns: self.weights.reference(ns) for ns in namespaces})
        # Jobs that publish: their Role goes in the service's namespace, and their step runs its pipeline.
        published = sorted({ref.namespace for ref in args.pipelines.values()})
        deps += [self.namespaces.namespaces[ns] for ns in published] + ([self.pipeline] if published else [])
        # After the monitoring CRDs too: JobSet's chart declares a ServiceMonitor and fails without its kind.
        return Training(f"{name}-training", args, opts=after(*deps, *queues, self.trainer, self.observability.crds))
