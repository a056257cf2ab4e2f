"""InferenceGraph: a chain of Triton models declared in the stack file (`graphs`).

- `placement: ensemble`: one TritonService serves the graph; its model repository holds
  the steps' models and the platform writes the ensemble model's config.pbtxt beside it
  (model_config.ensemble_config), so Triton runs the chain on one GPU share.
- `placement: ray`: one KubeRay RayService. The head takes no work (`num-cpus: 0`); each
  step has its own worker group (the step's image and GPU share) that advertises a custom
  Ray resource `step-<name>`, and the step's Serve deployment asks for that resource, so
  its replicas run only on its own workers. The Serve application is graph_app (shipped
  with the platform, mounted from a ConfigMap): customers write no Ray code.

Ray across the mesh follows Ray's Istio guide (doc/source/cluster/kubernetes/
k8s-ecosystem/istio.md): every Ray port fixed and listed on a headless Service, a small
worker-port range, `node-ip-address` set to the pod's name on that Service, and the
operator's init-container injection off (ENABLE_INIT_CONTAINER_INJECTION=false), whose
container would start before the sidecar and be refused under STRICT mTLS (each worker waits
for the head's GCS in its own container instead: WAIT_FOR_GCS). The KubeRay
operator runs inside the mesh, so its calls to the head's dashboard carry its identity.
"""

import json
from typing import Optional

import pulumi
import pulumi_kubernetes as k8s
import yaml

from inference_platform.args import InferenceGraphArgs
from inference_platform.core import endpoints as ep
from inference_platform.core import versions
from inference_platform.core.common import (
    SKIP_AWAIT,
    from_namespace,
    from_pods,
    init_component,
    resource_opts,
    restricted_security_context,
    scale_down_annotations,
    shipped_dir,
    standard_labels,
    with_node_selector,
)
from inference_platform.core.grammar import quantity
from inference_platform.gpu.profiles import container_resources, gpu_scheduling
from inference_platform.mesh.basic_auth import basic_auth
from inference_platform.mesh.routes import BASIC_CREDENTIAL, envoy_duration, unauthorized_route
from inference_platform.mesh.security import ISTIO_METRICS_PORTS, declare_mesh_security, ingress_source
from inference_platform.observability.metrics import TRITON_METRICS_PORT, pod_monitor_spec
from inference_platform.serving.inputs import InferenceGraphInputs
from inference_platform.serving.model_config import ensemble_config
from inference_platform.serving.triton import TritonService
from inference_platform.serving.triton_server import model_repository_url
from inference_platform.settings.cluster import NodeGroup
from inference_platform.settings.component_args import validated
from inference_platform.settings.graphs import MAX_STEP_REPLICAS, Graph, GraphStep, graph_workload, object_store_bytes
from inference_platform.timing.estimates import estimates_or_defaults
from inference_platform.timing.readiness import ray_upgrade_budget, ray_upgrade_timeouts
from inference_platform.weights.inputs import WeightsRef

SERVE_PORT = 8000
DASHBOARD_PORT = 8265
GCS_PORT = 6379
# Ray's own ports, fixed so Istio knows them (names as `ray start` flags).
RAY_PORTS = {
    "node-manager-port": 6380,
    "object-manager-port": 6381,
    "runtime-env-agent-port": 6382,
    "dashboard-agent-grpc-port": 6383,
    "dashboard-agent-listen-port": 52365,
    "metrics-export-port": 8080,
}
METRICS_PORT = RAY_PORTS["metrics-export-port"]
# Each step replica serves its in-process Triton's metrics there (graph_app/triton.py
# serve_metrics: Triton's default metrics port), on the workers.
STEP_METRICS_PORT = TRITON_METRICS_PORT
STEP_METRICS_PORT_NAME = "triton-metrics"
# Ray's ports that speak HTTP (the rest are gRPC).
HTTP_PORTS = frozenset({METRICS_PORT, DASHBOARD_PORT, SERVE_PORT, RAY_PORTS["dashboard-agent-listen-port"]})
# Ports of a node's Ray worker processes (one per actor or task process): a step worker runs
# its replica, Serve's proxy and a few tasks. Istio's guide: keep the range small.
MIN_WORKER_PORT, MAX_WORKER_PORT = 10002, 10031
GRAPH_LABEL = "inference-platform/graph"
INGRESS_REPLICAS = 2
APP_DIR = "/opt/inference-platform"
GRAPH_APP_SOURCE = shipped_dir("graph_app")
KUBERAY_NAMESPACE = ep.RAY_NAMESPACE
KUBERAY_PRINCIPAL = f"cluster.local/ns/{KUBERAY_NAMESPACE}/sa/kuberay-operator"
# The operator's pods as the kuberay-operator 1.7.0 chart labels them (templates/deployment.yaml:
# the Deployment's selector, kuberay-operator.name = the chart's name, instance = the release's,
# which the platform names after the chart: platform.py _graphs).
KUBERAY_OPERATOR_POD_LABELS = {"app.kubernetes.io/name": versions.KUBERAY_OPERATOR.name,
                               "app.kubernetes.io/instance": versions.KUBERAY_OPERATOR.name}
# What KubeRay v1.7.0 adds to a head pod under in-tree autoscaling (ray-operator/controllers/ray/
# common/pod.go BuildPod): `ray-logs` at /tmp/ray, which the autoscaler's container shares with
# Ray's, an emptyDir on the node's disk (addEmptyDir, StorageMediumDefault). Its /dev/shm
# (`shared-mem`) is medium Memory, and a worker mounts its own, which KubeRay leaves alone.
KUBERAY_HEAD_DISK_VOLUMES = ("ray-logs",)
RAY_UID = 1000
# What `pulumi up` waits for after changing a RayService (pulumi-kubernetes provider/pkg/
# metadata/overrides.go ReadyCondition, await/condition/jsonpath.go: first a status.observedGeneration
# that has caught up with metadata.generation). KubeRay v1.7.0 writes, in one status update,
# observedGeneration and UpgradeInProgress: True while a pending RayCluster exists beside the
# active one, False once traffic has moved to it or no new cluster was needed
# (rayservice_controller.go calculateStatus, calculateConditions).
# KubeRay v1.7.0 runs a Ray container's own command and args before the `ray start` it
# generates (`<args> && ulimit ...; ray start ...`, common/pod.go BuildPod) unless they say
# `ray start` themselves. Without its init container (ENABLE_INIT_CONTAINER_INJECTION=false:
# "you will need to inject your own init container to ensure ray GCS is up before the ray
# workers start", common/pod.go), a worker's `ray start` gives up on the head's GCS after
# about 20 s (Ray 2.60 _private/node.py _init_gcs_client, NUM_REDIS_GET_RETRIES) and the pod
# crash-loops while the head still pulls its image. So each worker waits first, in its main
# container (after the sidecar, which an init container would precede under STRICT mTLS),
# with the check KubeRay's init container runs (DefaultWorkerPodTemplate, wait-gcs-ready) at
# the address KubeRay gives every worker (FQ_RAY_IP, RAY_PORT: setContainerEnvVars).
WAIT_FOR_GCS = ('until ray health-check --address "$FQ_RAY_IP:$RAY_PORT" > /dev/null 2>&1; '
                'do echo "Waiting for the GCS of the Ray head at $FQ_RAY_IP:$RAY_PORT"; sleep 5; done')
UPGRADE_DONE = 'jsonpath={.status.conditions[?(@.type=="UpgradeInProgress")].status}=False'
WAIT_FOR_UPGRADE = {"pulumi.com/waitFor": UPGRADE_DONE}


def step_resource(step: GraphStep) -> str:
    """The custom Ray resource a step's workers advertise and its replicas ask for."""
    return f"step-{step.name}"


def ray_resources_param(resources: dict[str, int]) -> str:
    """`rayStartParams.resources` in the one form both of its parsers read: JSON in single
    quotes. KubeRay 1.7.0 trims any quotes and unmarshals JSON (ray-operator/controllers/ray/
    common/pod.go, getResourcesMap); Ray's autoscaler drops the first and last character and
    every backslash before json.loads (ray/autoscaler/_private/kuberay/autoscaling_config.py,
    _get_custom_resources). Unquoted JSON would lose its braces in the autoscaler."""
    return "'" + json.dumps(resources, sort_keys=True) + "'"


def headless_service_name(graph: Graph) -> str:
    return f"{graph.name}-ray"


def ray_start_params(graph: Graph, *, cpus: str, gpus: int, resources: Optional[dict[str, int]] = None) -> dict[str, str]:
    fqdn = f"{headless_service_name(graph)}.{graph.k8s_namespace}.svc.cluster.local"
    params = {
        **{flag: str(port) for flag, port in RAY_PORTS.items()},
        "min-worker-port": str(MIN_WORKER_PORT),
        "max-worker-port": str(MAX_WORKER_PORT),
        # The pod's DNS name on the headless Service (Istio's guide), evaluated by the pod's shell.
        "node-ip-address": f"$(hostname -I | tr -d ' ' | sed 's/\\./-/g').{fqdn}",
        "num-cpus": cpus,
        # Explicit: KubeRay derives it only from resource names ending in "gpu", not from MIG slices.
        "num-gpus": str(gpus),
    }
    if resources:
        params["resources"] = ray_resources_param(resources)
    return params


def _replica_cpus(step: GraphStep) -> str:
    # Ray counts whole CPUs for the node; a fractional request still gives the replica one.
    return str(max(1, int(quantity(step.resources.cpu))))


def kserve_datatype(data_type: str) -> str:
    """A model config's data type as the KServe protocol names it: TYPE_STRING is BYTES
    (triton-inference-server/common src/model_config.cc, DataTypeToProtocolString)."""
    return "BYTES" if data_type == "TYPE_STRING" else data_type.removeprefix("TYPE_")


def _graph_tensors(tensors) -> list[dict]:
    # What graph_app/kserve.py checks requests against, as the ensemble's config declares them.
    return [{"name": t.name, "datatype": kserve_datatype(t.data_type), "dims": list(t.dims)} for t in tensors]


def serve_config(graph: Graph, repositories: dict[str, str]) -> dict:
    """serveConfigV2: graph_app chaining the steps, one deployment per step pinned to its
    workers by its custom resource and GPUs, autoscaled within its replica range. The graph's
    clients call the model named after the graph with the tensors it declares, as they would
    call its Triton ensemble."""
    steps = [
        {"name": s.name, "model": s.model, "model_repository": repositories[s.name],
         "inputs": dict(s.inputs), "outputs": dict(s.outputs)}
        for s in graph.steps
    ]
    deployments = [
        {
            # graph_app names each step's deployment as its resource.
            "name": step_resource(s),
            # Ray Serve's default (5 in Ray 2.60, ray/serve/_private/constants.py
            # DEFAULT_MAX_ONGOING_REQUESTS) would hold back what Triton's dynamic batcher batches.
            "max_ongoing_requests": s.max_ongoing_requests,
            "autoscaling_config": {"min_replicas": s.replicas.min, "max_replicas": s.replicas.max,
                                   "target_ongoing_requests": 2},
            "ray_actor_options": {"num_cpus": 1, "num_gpus": s.gpu.count, "resources": {step_resource(s): 1}},
        }
        for s in graph.steps
    ]
    # The ingress only forwards tensors; any worker's spare CPU runs it (never the head: num-cpus 0).
    # Every request passes through it (Serve's proxies are already one per node with a replica,
    # proxy_location EveryNode by default): two, which Serve spreads over the workers (its
    # default SPREAD scheduling, ray/serve/_private/deployment_scheduler.py at 2.60.0), so the
    # loss of one node leaves the graph reachable.
    deployments.append({"name": "graph", "num_replicas": INGRESS_REPLICAS, "ray_actor_options": {"num_cpus": 0.1}})
    return {
        "http_options": {"host": "0.0.0.0", "port": SERVE_PORT},
        "applications": [{
            "name": graph.name,
            "route_prefix": "/",
            "import_path": "graph_app.app:build",
            "args": {"name": graph.name, "inputs": _graph_tensors(graph.inputs),
                     "outputs": _graph_tensors(graph.outputs), "steps": steps},
            "deployments": deployments,
        }],
    }


def _pod_template(graph: Graph, container: dict, *, volumes: list[dict], scheduling: Optional[dict] = None,
                  added_volumes: tuple[str, ...] = ()) -> dict:
    """A Ray pod's template; `added_volumes` are the disk-backed emptyDirs KubeRay adds to it.
    None of its emptyDirs holds anything a new pod needs (Ray's session, logs and spilled
    objects belong to the pod's own life), so none keeps an idle node from scaling down."""
    spec = {
        "securityContext": {"runAsNonRoot": True, "runAsUser": RAY_UID, "fsGroup": RAY_UID,
                            "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [container],
        "volumes": volumes,
        **(scheduling or {}),
    }
    return {"metadata": {"labels": {GRAPH_LABEL: graph.name, "app": graph.name},
                         "annotations": scale_down_annotations(volumes, added_volumes)},
            "spec": spec}


def _container(name: str, image: str, resources: dict, mounts: list[dict], env: list[dict],
               env_from: Optional[list[dict]] = None) -> dict:
    # Ray writes its session directory and spilled objects under /tmp of the image.
    security = {**restricted_security_context(runAsUser=RAY_UID), "readOnlyRootFilesystem": False}
    container = {
        "name": name, "image": image, "resources": resources, "volumeMounts": mounts,
        "env": [{"name": "PYTHONPATH", "value": APP_DIR}, *env], "securityContext": security,
    }
    if env_from:
        container["envFrom"] = env_from
    return container


def _app_volume(config_map: pulumi.Input[str]) -> tuple[dict, dict]:
    return ({"name": "graph-app", "configMap": {"name": config_map}},
            {"name": "graph-app", "mountPath": f"{APP_DIR}/graph_app", "readOnly": True})


def worker_group(graph: Graph, step: GraphStep, group: NodeGroup, weights: WeightsRef, app_config_map) -> dict:
    sched = gpu_scheduling(group, step.gpu.count, step.gpu.mig_profile)
    r = step.resources
    resources = container_resources(r, step.gpu, group)
    app_volume, app_mount = _app_volume(app_config_map)
    volumes = [app_volume, {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": r.shm_size}}]
    mounts = [app_mount, {"name": "dshm", "mountPath": "/dev/shm"}]
    env_from = None
    if step.model_repository.cache == "fileShare":
        volumes.append({"name": "models", "persistentVolumeClaim": {"claimName": weights.claim_name, "readOnly": True}})
        mounts.append({"name": "models", "mountPath": weights.mount_path, "readOnly": True})
    else:
        env_from = [{"secretRef": {"name": weights.s3_secret_name}}]
    container = {**_container("ray-worker", step.image, resources, mounts, [], env_from),
                 "args": [WAIT_FOR_GCS],
                 # KubeRay adds its `metrics` port (8080) beside it (ray-operator v1.7.0 common/pod.go).
                 "ports": [{"name": STEP_METRICS_PORT_NAME, "containerPort": STEP_METRICS_PORT}]}
    scheduling = {"nodeSelector": sched.node_selector, "tolerations": sched.tolerations}
    params = ray_start_params(graph, cpus=_replica_cpus(step), gpus=step.gpu.count, resources={step_resource(step): 1})
    # In the /dev/shm above, which KubeRay then leaves alone (ray-operator v1.7.0 common/pod.go
    # addEmptyDir skips a mounted /dev/shm); the check of graph_problems keeps it within Ray's rules.
    params["object-store-memory"] = str(object_store_bytes(r))
    return {
        "groupName": step.name,
        **worker_bounds(step),
        "rayStartParams": params,
        "template": _pod_template(graph, container, volumes=volumes, scheduling=scheduling),
    }


def worker_bounds(step: GraphStep) -> dict[str, int]:
    """A step's worker group bounds. KubeRay v1.7.0 hashes a RayService's cluster spec without
    replicas, minReplicas and maxReplicas (utils/util.go GenerateHashWithoutReplicasAndWorkersToDelete),
    so an edit of them alone neither updates the running RayCluster nor starts a new one
    (rayservice_controller.go shouldUpdateCluster, shouldPrepareNewCluster), while the new
    serveConfigV2 does reach it (checkIfNeedSubmitServeApplications). So Serve's autoscaling
    holds the step's range, and the group's bounds are fixed and wide: each worker advertises
    one `step-<name>`, each replica asks for one, so the autoscaler (which reads the bounds from
    the RayCluster) runs as many workers as Serve has replicas. `replicas` only starts a new
    cluster's workers with the head."""
    return {"replicas": step.replicas.min, "minReplicas": 0, "maxReplicas": MAX_STEP_REPLICAS}


def head_group(graph: Graph, app_config_map) -> dict:
    app_volume, app_mount = _app_volume(app_config_map)
    resources = {"requests": {"cpu": "1", "memory": "4Gi"}, "limits": {"memory": "4Gi"}}
    ports = [{"name": n, "containerPort": p} for n, p in
             (("gcs-server", GCS_PORT), ("dashboard", DASHBOARD_PORT), ("serve", SERVE_PORT), ("metrics", METRICS_PORT))]
    # The head runs Ray's control processes and Serve's controller, no model: the first
    # step's image, which carries the Ray and Python every node of the cluster must share.
    container = {**_container("ray-head", graph.steps[0].image, resources, [app_mount], []), "ports": ports}
    return {
        "rayStartParams": {**ray_start_params(graph, cpus="0", gpus=0), "dashboard-host": "0.0.0.0"},
        # In-tree autoscaling is always on (ray_service_spec), so KubeRay adds its log volume.
        "template": _pod_template(graph, container, volumes=[app_volume], added_volumes=KUBERAY_HEAD_DISK_VOLUMES),
    }


def ray_service_spec(graph: Graph, groups: dict[str, NodeGroup], weights: WeightsRef,
                     repositories: dict[str, str], app_config_map: pulumi.Input[str]) -> dict:
    return {
        # A changed cluster spec starts a whole new RayCluster and switches traffic once its
        # Serve applications are healthy: no downtime, at the cost of twice the graph's GPUs
        # during the switch (the capacity check counts them). In-place would restart the
        # workers serving traffic; incremental upgrade needs the Gateway API.
        "upgradeStrategy": {"type": "NewCluster"},
        "serveConfigV2": yaml.safe_dump(serve_config(graph, repositories), sort_keys=False),
        "rayClusterConfig": {
            "rayVersion": versions.RAY_VERSION,
            # Ray's token auth on the dashboard and Ray's gRPC (not on Serve's HTTP): KubeRay
            # creates the token Secret, hands it to every Ray container and sends it with its own
            # dashboard calls (ray-operator v1.7.0 raycluster_controller.go reconcileAuthSecret,
            # common/pod.go SetContainerTokenAuthEnvVars, utils/util.go GetRayDashboardClientFunc).
            "authOptions": {"mode": "token"},
            # Serve's replica demand scales the worker groups; pending worker pods scale the nodes.
            "enableInTreeAutoscaling": True,
            "autoscalerOptions": {
                "upscalingMode": "Default",
                "idleTimeoutSeconds": 300,
                "resources": {"requests": {"cpu": "200m", "memory": "512Mi"}, "limits": {"memory": "512Mi"}},
                "securityContext": restricted_security_context(runAsUser=RAY_UID),
            },
            "headGroupSpec": head_group(graph, app_config_map),
            "workerGroupSpecs": [worker_group(graph, s, groups[s.gpu.group], weights, app_config_map) for s in graph.steps],
        },
    }


def headless_service_spec(graph: Graph) -> dict:
    """Every Ray port of the graph's pods, so Istio sees Ray's traffic as known services."""
    ports = {**RAY_PORTS, "gcs": GCS_PORT, "dashboard": DASHBOARD_PORT, "serve": SERVE_PORT}
    ports.update({f"worker-{p}": p for p in range(MIN_WORKER_PORT, MAX_WORKER_PORT + 1)})
    return {
        "clusterIP": "None",
        "publishNotReadyAddresses": True,
        "selector": {GRAPH_LABEL: graph.name},
        "ports": [{"name": name, "port": port, "appProtocol": "http" if port in HTTP_PORTS else "grpc"}
                  for name, port in sorted(ports.items(), key=lambda kv: kv[1])],
    }


def graph_app_files() -> dict[str, str]:
    """The graph application's sources, as the ConfigMap that every Ray pod mounts holds them."""
    return {p.name: p.read_text() for p in sorted(GRAPH_APP_SOURCE.glob("*.py"))}


class InferenceGraph(pulumi.ComponentResource):
    """A chain of Triton models: a Triton ensemble on one GPU share, or a RayService across nodes."""

    urls: pulumi.Output[list[str]]
    """URLs of the graph's hosts through the gateway."""
    credentials: Optional[pulumi.Output[dict[str, str]]]
    """Secret. Basic Auth `username` and `password` (auth mode `basic`)."""

    def __init__(self, name: str, args: InferenceGraphArgs, opts: Optional[pulumi.ResourceOptions] = None):
        a = validated(InferenceGraphInputs, args, "InferenceGraph")
        init_component(self, "InferenceGraph", name, opts)
        graph = a.graph
        if graph.placement == "ensemble":
            service = TritonService(f"{name}-triton", {
                "service": graph_workload(graph), "gpu_groups": a.gpu_groups, "weights": a.weights, "mesh": a.mesh,
                "model_configs": {graph.name: ensemble_config(graph)},
            }, opts=resource_opts(self))
            self.urls, self.credentials = service.urls, service.credentials
        else:
            self.urls, self.credentials = self._ray(name, a)
        self.register_outputs({"urls": self.urls, "credentials": self.credentials})

    def _ray(self, name: str, a: InferenceGraphInputs):
        graph = a.graph
        ns = graph.k8s_namespace
        labels = standard_labels(graph.name, app=graph.name)
        meta = {"name": graph.name, "namespace": ns, "labels": labels}

        def custom(role: str, api_version: str, kind: str, spec, metadata=meta, opts=None, depends_on=()):
            return k8s.apiextensions.CustomResource(
                f"{name}-{role}", api_version=api_version, kind=kind, metadata=metadata, spec=spec,
                opts=pulumi.ResourceOptions.merge(resource_opts(self, depends_on=depends_on), opts))

        # Auto-named: a new graph_app replaces the ConfigMap (create first, delete at the end of
        # `pulumi up`), and the RayService moves to a new cluster, which mounts the new one.
        app = k8s.core.v1.ConfigMap(f"{name}-app", metadata={"namespace": ns, "labels": labels},
                                    data=graph_app_files(), opts=resource_opts(self))
        # Only names Ray's ports and pods for Istio and DNS: its pods come from the RayService, on
        # GPU nodes that may still be booting, so `pulumi up` must not wait for its endpoints.
        k8s.core.v1.Service(f"{name}-headless",
                            metadata={**meta, "name": headless_service_name(graph), "annotations": SKIP_AWAIT},
                            spec=headless_service_spec(graph), opts=resource_opts(self))
        repositories = {s.name: model_repository_url(a.weights, s.model_repository.cache, s.model_repository.path)
                        for s in graph.steps}
        groups = {g.name: g for g in a.gpu_groups}
        spec = pulumi.Output.all(app.metadata["name"], pulumi.Output.all(**repositories)).apply(
            lambda v: ray_service_spec(graph, groups, a.weights, v[1], v[0]))
        # The old cluster serves, mounting the old ConfigMap, until the new one has taken over
        # (and KubeRay deletes it rayClusterDeletionDelaySeconds later, 60 s by default:
        # rayservice_controller.go cleanUpRayClusterInstance). A pod that starts meanwhile (a
        # worker Serve scales out) cannot mount a deleted ConfigMap, so `pulumi up` waits on the
        # RayService until the switch is done: the engine deletes replaced resources only after
        # every registration has finished (pulumi deployment_executor.go performPostSteps).
        budget = ray_upgrade_budget(estimates_or_defaults(a.gpu_groups, [], a.cold_start), graph)
        custom("rayservice", "ray.io/v1", "RayService", spec, metadata={**meta, "annotations": WAIT_FOR_UPGRADE},
               opts=pulumi.ResourceOptions(custom_timeouts=ray_upgrade_timeouts(budget)))

        credentials, _, checked_by = basic_auth(self, name, graph.name, ns, labels, graph.auth, list(graph.hosts),
                                                a.mesh.ingress_namespace, a.mesh.ingress_pod_labels)
        custom("virtualservice", "networking.istio.io/v1", "VirtualService", virtual_service_spec(graph, a.mesh.gateway),
               depends_on=checked_by)
        selector = {GRAPH_LABEL: graph.name}
        declare_mesh_security(custom, selector, (METRICS_PORT, STEP_METRICS_PORT),
                              authorization_policy_spec(graph, a.mesh.ingress_principal), graph.auth)
        k8s.networking.v1.NetworkPolicy(f"{name}-networkpolicy", metadata=meta,
                                        spec=network_policy_spec(graph, a.mesh.ingress_namespace, a.mesh.monitoring_namespace,
                                                                 a.mesh.ingress_pod_labels),
                                        opts=resource_opts(self))
        custom("podmonitor", "monitoring.coreos.com/v1", "PodMonitor", pod_monitor_spec(selector, "metrics", STEP_METRICS_PORT_NAME))
        scheme = "https" if a.mesh.tls else "http"
        return [f"{scheme}://{h}" for h in graph.hosts], credentials


def serve_service_host(graph: Graph) -> str:
    # KubeRay's Service in front of the Serve proxies of the active cluster (<RayService>-serve-svc).
    return f"{graph.name}-serve-svc.{graph.k8s_namespace}.svc.cluster.local"


def virtual_service_spec(graph: Graph, gateway: str) -> dict:
    """With Basic Auth the gateway's filter checks the credential (basic_auth.py); a request without one gets 401 here."""
    basic = graph.auth.mode == "basic"
    auth = dict(BASIC_CREDENTIAL) if basic else {}
    route = {"name": "graph", "route": [{"destination": {"host": serve_service_host(graph), "port": {"number": SERVE_PORT}}}],
             "timeout": envoy_duration(graph.timeout_seconds)}
    if auth:
        route["match"] = [{"headers": auth}]
    http = [route]
    if basic:
        http.append(unauthorized_route(graph.auth.realm or graph.name))
    return {"hosts": list(graph.hosts), "gateways": [gateway], "http": http}


def authorization_policy_spec(graph: Graph, ingress_principal: str) -> dict:
    """The ingress gateway reaches Serve; the operator the dashboard; the graph's own pods
    every Ray port; Prometheus the metrics port."""
    return {
        "selector": {"matchLabels": {GRAPH_LABEL: graph.name}},
        "action": "ALLOW",
        "rules": [
            {"from": [{"source": ingress_source(graph.auth, ingress_principal)}], "to": [{"operation": {"ports": [str(SERVE_PORT)]}}]},
            {"from": [{"source": {"principals": [KUBERAY_PRINCIPAL]}}],
             "to": [{"operation": {"ports": [str(DASHBOARD_PORT), str(SERVE_PORT)]}}]},
            # Ray's nodes call each other on every port but the dashboard's; KubeRay names the
            # head's ServiceAccount after the generated RayCluster, so the graph's namespace
            # stands for its identities.
            {"from": [{"source": {"namespaces": [graph.k8s_namespace]}}], "to": [{"operation": {"notPorts": [str(DASHBOARD_PORT)]}}]},
            {"to": [{"operation": {"ports": [str(METRICS_PORT), str(STEP_METRICS_PORT)]}}]},
        ],
    }


def network_policy_spec(graph: Graph, ingress_namespace: str, monitoring_namespace: str,
                        ingress_pods: dict[str, str]) -> dict:
    """Serve's port admits the ingress gateway's pods (`ingress_pods` in `ingress_namespace`), the
    dashboard's and Serve's the KubeRay operator's pods, not every pod of their namespaces; Ray's
    ports the graph's own pods; the metrics ports the monitoring namespace."""
    return {
        "podSelector": {"matchLabels": {GRAPH_LABEL: graph.name}},
        "policyTypes": ["Ingress"],
        "ingress": [
            {"from": [from_pods(ingress_namespace, ingress_pods)], "ports": [{"protocol": "TCP", "port": SERVE_PORT}]},
            {"from": [from_pods(KUBERAY_NAMESPACE, KUBERAY_OPERATOR_POD_LABELS)],
             "ports": [{"protocol": "TCP", "port": p} for p in (DASHBOARD_PORT, SERVE_PORT)]},
            {"from": [{"podSelector": {"matchLabels": {GRAPH_LABEL: graph.name}}}], "ports": intra_cluster_ports()},
            {"from": from_namespace(monitoring_namespace),
             "ports": [{"protocol": "TCP", "port": p} for p in (METRICS_PORT, STEP_METRICS_PORT, *ISTIO_METRICS_PORTS)]},
        ],
    }


def intra_cluster_ports() -> list[dict]:
    """The ports Ray's nodes call each other on (those listed for the mesh), without the
    dashboard's: it submits jobs, that is runs code, so only the operator reaches it. KubeRay's
    probes of the head's dashboard run inside the pod (localhost), which no policy filters."""
    fixed = sorted({*RAY_PORTS.values(), GCS_PORT, SERVE_PORT})
    return ([{"protocol": "TCP", "port": p} for p in fixed]
            + [{"protocol": "TCP", "port": MIN_WORKER_PORT, "endPort": MAX_WORKER_PORT}])


def kuberay_operator_values(system_node_selector: Optional[dict[str, str]] = None) -> dict:
    """The operator inside the mesh (its dashboard calls carry an identity under STRICT mTLS),
    without the init container that would start before the sidecar (Ray's Istio guide); on the
    system group (kuberay-operator 1.7.0 values.yaml nodeSelector)."""
    values = {"env": [{"name": "ENABLE_INIT_CONTAINER_INJECTION", "value": "false"}]}
    return with_node_selector(values, system_node_selector or {}, "nodeSelector")


def kuberay_isolation(name: str, opts: pulumi.ResourceOptions) -> None:
    """Nothing reaches the operator: it only calls out (the API server, the Ray heads)."""
    meta = {"name": "kuberay-operator", "namespace": KUBERAY_NAMESPACE, "labels": standard_labels("kuberay-operator")}
    k8s.networking.v1.NetworkPolicy(f"{name}-networkpolicy", metadata=meta,
                                    spec={"podSelector": {}, "policyTypes": ["Ingress"]}, opts=opts)
    # An ALLOW policy without rules admits no request to the namespace's workloads.
    k8s.apiextensions.CustomResource(f"{name}-authorizationpolicy", api_version="security.istio.io/v1",
                                     kind="AuthorizationPolicy", metadata=meta, spec={}, opts=opts)
