"""TritonService: one model service with its versions, canary weights, auth and autoscaling.

Per service: ServiceAccount, Service (http 8000, grpc 8001, http-metrics 8002),
DestinationRule (a subset per version), VirtualService (weights, mirror, auth),
PeerAuthentication, AuthorizationPolicy, NetworkPolicy, PodMonitor, and the admin key
that closes Triton's control APIs (triton_api.py; the routes and the policy open only
inference, health and metadata).
Per version: a Deployment named `<service>-<version>`, an HPA on Triton's queue time,
a PDB when more than one replica must stay up.

`pulumi up` waits for each Deployment as long as the cold-start model says its rollout
may legitimately take (readiness.py), and the HPA names its target directly, so it
never waits on that rollout.

Dynamic batching and instance groups are model settings: they live in the model's
`config.pbtxt`. A version picks a tuned variant from the model's `configs/` folder
with `modelConfigName` (Triton's --model-config-name).

Model configs the platform writes (`model_configs`, a graph's ensemble for example) are
one ConfigMap per service, named after its content, and a second model repository in
every version: a change is a new ConfigMap and a rollout onto it.
"""

import hashlib
import json
from typing import Mapping, Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s
import pulumi_random as random

from inference_platform.args import TritonServiceArgs
from inference_platform.core import hardening
from inference_platform.core.common import (
    from_namespace,
    from_pods,
    init_component,
    resource_opts,
    scale_down_annotations,
    standard_labels,
)
from inference_platform.core.endpoints import in_cluster_host
from inference_platform.gpu.profiles import container_resources, gpu_scheduling
from inference_platform.mesh.basic_auth import basic_auth
from inference_platform.mesh.routes import BASIC_CREDENTIAL, envoy_duration, unauthorized_route
from inference_platform.mesh.security import ISTIO_METRICS_PORTS, declare_mesh_security, ingress_source
from inference_platform.observability.metrics import (
    PENDING_REQUESTS_METRIC,
    QUEUE_TIME_METRIC,
    TRITON_METRICS_PORT,
    TRITON_MODEL_LABEL,
    TRTLLM_ACTIVE_METRIC,
    TRTLLM_KV_CACHE_METRIC,
    VLLM_IN_FLIGHT_METRIC,
    pod_monitor_spec,
)
from inference_platform.serving.inputs import TritonServiceInputs
from inference_platform.serving.llm_engine import checks_engine, engine_check_container
from inference_platform.serving.llm_routing import declare_llm_routing, gateway_pods, pod_authorization_rules, pod_network_rules
from inference_platform.serving.openai_frontend import (
    METRICS_PATH,
    OPENAI_FRONTEND_PORT,
    frontend_container,
    metrics_port_names,
    metrics_ports,
    serves_openai,
    sidecar_spec,
)
from inference_platform.serving.shutdown import shutdown, sidecar_annotations
from inference_platform.serving.triton_api import (
    ADMIN_KEY_SECRET_KEY,
    CLOSED_MODEL_PATHS,
    OPEN_GRPC_METHODS,
    OPEN_GRPC_PATH_REGEX,
    OPEN_HTTP_PATH_REGEX,
    admin_key_env,
    admin_key_secret_name,
    open_http_policy_paths,
)
from inference_platform.serving.triton_server import (
    GRPC_PORT,
    HTTP_PORT,
    MODEL_CONFIGS_PATH,
    TRITON_UID,
    analysis_server,
    container_security_context,
    for_repository,
    model_repository_url,
    probes,
    server_volumes,
    triton_args,
)
from inference_platform.settings.cluster import NodeGroup
from inference_platform.settings.component_args import validated
from inference_platform.settings.llm import Llm
from inference_platform.settings.serving import Autoscaling, Service, Version, deployment_name
from inference_platform.timing.estimates import GroupEstimate, estimates_or_defaults
from inference_platform.timing.readiness import custom_timeouts, service_endpoints_budget, version_rollout_budget, wait_seconds
from inference_platform.tuning.llm_runs import declare_llm_tuning_run, tokenizer_container
from inference_platform.tuning.runs import (
    declare_tuning_run,
    model_config_container,
    tuning_network_policy_spec,
    upload_container,
)

# The volume of the platform-written model configs (triton_server.MODEL_CONFIGS_PATH).
MODEL_CONFIGS_VOLUME = "model-configs"
# Triton loads no model without a version directory, an ensemble neither, which has no files
# (model_lifecycle.cc AsyncLoad: "at least one version must be available under the version
# policy"). A ConfigMap holds no empty directory, so version 1 holds this note.
VERSION_NOTE_KEY = "version-note"
VERSION_NOTE = ("Version 1 of a model whose config.pbtxt the platform writes (an ensemble has no model files); "
                "Triton loads a model only with a version directory.\n")


# --------------------------------------------------------------------------- plain builders



# A pipeline-made version's origin, on its Deployment's metadata (not the pod template's: a
# record, not a reason to restart pods).
PROVENANCE_PREFIX = "inference-platform/"


def provenance_annotations(version: Version) -> dict[str, str]:
    p = version.provenance
    if p is None:
        return {}
    return {f"{PROVENANCE_PREFIX}workflow": p.workflow, f"{PROVENANCE_PREFIX}onnx": p.onnx,
            f"{PROVENANCE_PREFIX}onnx-sha256": p.onnx_sha256}

def rollout_estimates(gpu_groups: Sequence[NodeGroup], service: Service,
                      given: Sequence[GroupEstimate]) -> dict[str, GroupEstimate]:
    return estimates_or_defaults(gpu_groups, [service], given)


def pod_labels(service: Service, version: Version) -> dict[str, str]:
    return standard_labels(service.name, app=service.name, version=version.name)


def service_host(service: Service) -> str:
    return in_cluster_host(service.name, service.k8s_namespace)


def model_configs_data(configs: Mapping[str, str]) -> dict[str, str]:
    """The ConfigMap's data: each model's config.pbtxt as `<model>.pbtxt` (a key holds no '/';
    the volume's items put it in place), and the version directories' note."""
    return {**{f"{model}.pbtxt": text for model, text in sorted(configs.items())}, VERSION_NOTE_KEY: VERSION_NOTE}


def model_configs_name(service: Service, data: Mapping[str, str]) -> str:
    """`<service>-model-configs-<content hash>`. The Kubernetes provider replaces a ConfigMap
    whose data changes (enableConfigMapMutable is off), and one that keeps its name it deletes
    first: a pod starting meanwhile could not mount it, and nothing would roll the running
    pods. Named after its content, a changed ConfigMap is created beside the old one; the pod
    template names the new one, so the Deployments roll onto it (an update, never a
    replacement), and the old one is deleted after them."""
    digest = hashlib.sha256(json.dumps(dict(data), sort_keys=True).encode()).hexdigest()
    return f"{service.name}-model-configs-{digest[:10]}"


def model_configs_volume(models: Sequence[str], config_map: pulumi.Input[str]) -> tuple[dict, list[dict]]:
    """The ConfigMap as a volume laid out as a model repository (`<model>/config.pbtxt`,
    `<model>/1/`), and one read-only mount per model directory.

    Each model directory is mounted by subPath under MODEL_CONFIGS_PATH rather than the whole
    volume there: a ConfigMap volume's root also holds the kubelet's `..data` link and
    timestamped directory, which Triton would take for models (its repository scan skips only
    `.` and `..`: filesystem/implementations/local.h). A subPath mount never sees updates;
    none are needed, since a change is a new ConfigMap (model_configs_name).
    """
    items = []
    for model in sorted(models):
        items += [{"key": f"{model}.pbtxt", "path": f"{model}/config.pbtxt"},
                  {"key": VERSION_NOTE_KEY, "path": f"{model}/1/README"}]
    volume = {"name": MODEL_CONFIGS_VOLUME, "configMap": {"name": config_map, "items": items}}
    mounts = [{"name": MODEL_CONFIGS_VOLUME, "mountPath": f"{MODEL_CONFIGS_PATH}/{model}", "subPath": model,
               "readOnly": True} for model in sorted(models)]
    return volume, mounts


def deployment_spec(
    service: Service,
    version: Version,
    group: NodeGroup,
    service_account: pulumi.Input[str],
    repository: pulumi.Input[str],
    s3_secret: Optional[pulumi.Input[str]],
    claim: Optional[pulumi.Input[str]],
    autoscaled: bool,
    mount_path: str,
    progress_deadline_seconds: Optional[int] = None,
    model_configs: Optional[tuple[dict, list[dict]]] = None,
    admin_key_secret: Optional[pulumi.Input[str]] = None,
) -> dict:
    """A version's Deployment spec; `model_configs` is the platform's configs' volume and
    mounts (model_configs_volume); `admin_key_secret` the name of the service's admin-key
    Secret (admin_key_secret_name), as the Secret's output where the Deployment must wait for it."""
    labels = pod_labels(service, version)
    selector = {"app": service.name, "version": version.name}
    sched = gpu_scheduling(group, version.gpu.count, version.gpu.mig_profile)
    stopping = shutdown(service, version)
    volumes, mounts = server_volumes(version, claim, mount_path)
    if model_configs is not None:
        volumes.append(model_configs[0])
        mounts += model_configs[1]
    configs = model_configs is not None
    container = {
        "name": "triton",
        "image": version.image,
        "command": ["tritonserver"],
        "args": for_repository(repository, lambda r: triton_args(version, r, stopping.exit_timeout_seconds, configs)),
        "ports": [
            {"name": "http", "containerPort": HTTP_PORT, "protocol": "TCP"},
            {"name": "grpc", "containerPort": GRPC_PORT, "protocol": "TCP"},
            {"name": "http-metrics", "containerPort": TRITON_METRICS_PORT, "protocol": "TCP"},
        ],
        # The restriction flags' key: an unset variable would leave `$(TRITON_ADMIN_KEY)` itself
        # as the key, so the variable is always there (and the pod does not start without it).
        "env": [admin_key_env(admin_key_secret if admin_key_secret is not None else admin_key_secret_name(service.name))],
        "resources": container_resources(version.resources, version.gpu, group),
        "volumeMounts": mounts,
        "securityContext": container_security_context(),
        **probes(version),
        # Until the endpoint removal has reached the gateways, requests still arrive.
        "lifecycle": {"preStop": {"sleep": {"seconds": stopping.pre_stop_seconds}}},
    }
    if version.serves_openai:
        # The admin key is for Triton's restriction flags, which the frontend does not take.
        del container["env"]
        container |= frontend_container(version, repository, mount_path)
    if s3_secret:
        container["envFrom"] = [{"secretRef": {"name": s3_secret}}]
    pod_spec_extra = {}
    if checks_engine(version) and claim:
        [share] = [m for m in mounts if m["mountPath"] == mount_path]
        pod_spec_extra["initContainers"] = [engine_check_container(service, version, repository, share)]
    spec = {
        "selector": {"matchLabels": selector},
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}},
        "template": {
            "metadata": {"labels": labels, "annotations": {**sidecar_annotations(stopping), **scale_down_annotations(volumes)}},
            "spec": {
                "serviceAccountName": service_account,
                # Triton never calls the Kubernetes API; the Istio sidecar brings its own
                # projected token (istio-token), so no token is mounted.
                "automountServiceAccountToken": False,
                "securityContext": {
                    "runAsNonRoot": True,
                    "runAsUser": TRITON_UID,
                    "fsGroup": TRITON_UID,
                    "seccompProfile": {"type": "RuntimeDefault"},
                },
                "nodeSelector": sched.node_selector,
                "tolerations": sched.tolerations,
                "topologySpreadConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": "kubernetes.io/hostname",
                        "whenUnsatisfiable": "ScheduleAnyway",
                        "labelSelector": {"matchLabels": selector},
                    }
                ],
                "terminationGracePeriodSeconds": stopping.grace_seconds,
                **pod_spec_extra,
                "containers": [container],
                "volumes": volumes,
            },
        },
    }
    # An HPA owns the replica count; a replicas field would fight it on every update.
    if not autoscaled:
        spec["replicas"] = version.replicas
    # A replica on a new GPU node makes no visible progress for a whole cold start; a
    # shorter deadline would mark the rollout ProgressDeadlineExceeded while it is fine.
    if progress_deadline_seconds is not None:
        spec["progressDeadlineSeconds"] = progress_deadline_seconds
    return spec


def hpa_spec(target_name: pulumi.Input[str], scaling: Autoscaling, llm: Optional[Llm] = None) -> dict:
    # prometheus-adapter turns a selector into label matchers on Triton's series: the named
    # model's values replace the pod's worst model's.
    selector = {"selector": {"matchLabels": {TRITON_MODEL_LABEL: scaling.queue_time_model}}} if scaling.queue_time_model else {}

    def per_pod(metric: str, target: str, metric_selector: dict = selector) -> dict:
        return {"type": "Pods", "pods": {"metric": {"name": metric, **metric_selector},
                                         "target": {"type": "AverageValue", "averageValue": target}}}

    # Queue time, and the backlog that keeps rising where queue time falls (saturation).
    metrics = [per_pod(QUEUE_TIME_METRIC, str(scaling.queue_time_target_us)),
               per_pod(PENDING_REQUESTS_METRIC, str(scaling.pending_requests_target))]
    if llm is not None:
        # An LLM backend takes each request at once: Triton's queue stays empty while the engine
        # fills, so the engine's own load decides (metrics.py; docs/serving.md: LLM autoscaling).
        metrics = [metrics[1]]
        if llm.engine == "tensorrtllm":
            kv_target = f"{round(llm.autoscaling.kv_cache_use_target * 1000)}m"
            metrics += [per_pod(TRTLLM_ACTIVE_METRIC, str(llm.in_flight_target), {}),
                        per_pod(TRTLLM_KV_CACHE_METRIC, kv_target, {})]
        else:
            metrics.append(per_pod(VLLM_IN_FLIGHT_METRIC, str(llm.in_flight_target), {}))
    return {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target_name},
        "minReplicas": scaling.min_replicas,
        "maxReplicas": scaling.max_replicas,
        "metrics": metrics,
        "behavior": {
            "scaleDown": {"stabilizationWindowSeconds": scaling.scale_down_stabilization_seconds},
            "scaleUp": {"stabilizationWindowSeconds": 0},
        },
    }


# Retries may be at most this share of the requests in flight (Istio's own default once a
# budget is set; without one Envoy allows 3 concurrent retries per cluster whatever the load).
RETRY_BUDGET = {"percent": 20, "minRetryConcurrency": 3}


def destination_rule_spec(service: Service) -> dict:
    """Subsets per version; ejection of pods that fail to answer at all, never of pods that
    answer 503 because they are busy (a full queue is Triton's UNAVAILABLE, HTTP 503:
    ejecting for it moves the load onto the others and saturates them in turn); a retry
    budget so retries cannot multiply an overload (istio/api destination_rule.proto
    OutlierDetection.split_external_local_origin_errors, TrafficPolicy.retry_budget)."""
    return {
        "host": service_host(service),
        "trafficPolicy": {
            "outlierDetection": {
                "splitExternalLocalOriginErrors": True,
                "consecutiveLocalOriginFailures": 5,
                "consecutive5xxErrors": 0,
                "interval": "30s",
                "baseEjectionTime": "60s",
                "maxEjectionPercent": 50,
            },
            "retryBudget": dict(RETRY_BUDGET),
        },
        "subsets": [{"name": v.name, "labels": {"version": v.name}} for v in service.versions],
    }


def _destination(service: Service, version: str, port: int) -> dict:
    return {"host": service_host(service), "subset": version, "port": {"number": port}}


def retry_policy(service: Service) -> dict:
    """A route's retries. `attempts: 0` makes Istio set no retry policy; without `retries`
    Istio would apply its own default (2 retries including on `retriable-status-codes`).
    A per-try timeout equal to the route timeout is left out: Envoy then bounds each try by
    the route timeout, the same limit."""
    retries = service.retries
    if not retries.attempts:
        return {"attempts": 0}
    policy: dict = {"attempts": retries.attempts, "retryOn": retries.retry_on}
    if service.per_try_timeout_seconds < service.timeout_seconds:
        policy["perTryTimeout"] = envoy_duration(service.per_try_timeout_seconds)
    return policy


def _not_found(name: str, match: Optional[list[dict]]) -> dict:
    """A route that answers 404 itself: Triton never sees the request."""
    rule: dict = {"name": name}
    if match:
        rule["match"] = match
    rule["directResponse"] = {"status": 404, "body": {"string": "Not Found\n"}}
    return rule


def _forward(service: Service, name: str, port: int, match: list[dict]) -> dict:
    """A route splitting traffic by weight; versions at weight 0 get no route entry."""
    rule: dict = {"name": name}
    if match:
        rule["match"] = match
    rule["route"] = [
        {"destination": _destination(service, v.name, port), "weight": v.weight} for v in service.versions if v.weight > 0
    ]
    rule["timeout"] = envoy_duration(service.timeout_seconds)
    rule["retries"] = retry_policy(service)
    if service.mirror is not None:
        rule["mirror"] = _destination(service, service.mirror.version, port)
        rule["mirrorPercentage"] = {"value": service.mirror.percent}
    return rule


def virtual_service_spec(service: Service, gateway: str) -> dict:
    """Routes for gRPC and HTTP that forward only Triton's inference, health and metadata paths
    (triton_api.py); any other path gets 404 from the gateway. With Basic Auth the gateway's
    filter checks the credential (basic_auth.py); a request without one gets 401 here.
    """
    basic = service.auth.mode == "basic"
    auth = dict(BASIC_CREDENTIAL) if basic else {}
    headers = {"headers": auth} if auth else {}
    grpc_match = [{"uri": {"regex": OPEN_GRPC_PATH_REGEX},
                   "headers": {**auth, "content-type": {"prefix": "application/grpc"}}}]
    http_match = [{"uri": {"regex": OPEN_HTTP_PATH_REGEX}, **headers}]
    closed_match = [{"uri": {"exact": path}, **headers} for path in CLOSED_MODEL_PATHS]
    http = [_forward(service, "grpc", GRPC_PORT, grpc_match),
            _not_found("closed", closed_match),
            _forward(service, "http", HTTP_PORT, http_match),
            _not_found("not-found", [headers] if headers else None)]
    if basic:
        http.append(unauthorized_route(service.auth.realm or service.name))
    return {"hosts": list(service.hosts), "gateways": [gateway], "http": http}


def authorization_policy_spec(service: Service, ingress_principal: str) -> dict:
    """Only the ingress gateway may call Triton, and only its inference, health and metadata
    paths and gRPC methods (triton_api.py); metrics stay reachable for Prometheus. An LLM
    service's own Gateway may call the OpenAI paths (llm_routing.py)."""
    source = [{"source": ingress_source(service.auth, ingress_principal)}]
    http = {"ports": [str(HTTP_PORT)], "paths": open_http_policy_paths(), "notPaths": list(CLOSED_MODEL_PATHS)}
    # An LLM service is routed through its own Gateway to the OpenAI port only: no route of the
    # ingress gateway reaches Triton's own HTTP and gRPC ports, so nothing admits a call there.
    classic = [] if service.llm_routed else [
        {"from": source, "to": [{"operation": http}]},
        {"from": source, "to": [{"operation": {"ports": [str(GRPC_PORT)], "paths": list(OPEN_GRPC_METHODS)}}]},
    ]
    return {
        "selector": {"matchLabels": {"app": service.name}},
        "action": "ALLOW",
        "rules": [
            *classic,
            {"to": [{"operation": {"ports": [str(TRITON_METRICS_PORT)]}}]},
            # Behind the OpenAI frontend the metrics are a path of the OpenAI port.
            *([{"to": [{"operation": {"ports": [str(OPENAI_FRONTEND_PORT)], "methods": ["GET"], "paths": [METRICS_PATH]}}]}]
              if serves_openai(service) else []),
            *(pod_authorization_rules(service) if service.llm_routed else ()),
        ],
    }


def network_policy_spec(service: Service, ingress_namespace: str, monitoring_namespace: str,
                        ingress_pods: dict[str, str]) -> dict:
    """Triton's HTTP and gRPC ports admit the ingress gateway's pods (`ingress_pods` in
    `ingress_namespace`), not every pod of its namespace; the metrics ports admit the monitoring
    namespace; an LLM-routed service's pods admit its own Gateway's instead (pod_network_rules)."""
    return {
        "podSelector": {"matchLabels": {"app": service.name}},
        "policyTypes": ["Ingress"],
        "ingress": [
            *([] if service.llm_routed else [
                {"from": [from_pods(ingress_namespace, ingress_pods)],
                 "ports": [{"protocol": "TCP", "port": p} for p in (HTTP_PORT, GRPC_PORT)]}]),
            {
                "from": from_namespace(monitoring_namespace),
                "ports": [{"protocol": "TCP", "port": p} for p in (*metrics_ports(service), *ISTIO_METRICS_PORTS)],
            },
            *(pod_network_rules(service) if service.llm_routed else ()),
        ],
    }


# --------------------------------------------------------------------------- component


class TritonService(pulumi.ComponentResource):
    """One Triton inference service: its versions, traffic split, auth and autoscaling."""

    urls: pulumi.Output[list[str]]
    """URLs of the service's hosts through the gateway."""
    weights: pulumi.Output[dict[str, int]]
    """Traffic weight per version (percent)."""
    auth_secret: Optional[pulumi.Output[str]]
    """Secret in the service's namespace with the Basic Auth credentials (auth mode `basic`)."""
    credentials: Optional[pulumi.Output[dict[str, str]]]
    """Secret. Basic Auth `username` and `password` (auth mode `basic`)."""

    def __init__(self, name: str, args: TritonServiceArgs, opts: Optional[pulumi.ResourceOptions] = None):
        a = validated(TritonServiceInputs, args, "TritonService")
        init_component(self, "TritonService", name, opts)
        service = a.service
        ns = service.k8s_namespace
        labels = standard_labels(service.name, app=service.name)

        sa = k8s.core.v1.ServiceAccount(
            f"{name}-sa", metadata={"name": service.name, "namespace": ns, "labels": labels}, opts=resource_opts(self)
        )
        # The Service's await lasts until no selected pod is unready: as long as a replica's startup.
        endpoints = pulumi.ResourceOptions.merge(
            resource_opts(self), pulumi.ResourceOptions(custom_timeouts=custom_timeouts(service_endpoints_budget(service)))
        )
        k8s.core.v1.Service(
            f"{name}-service",
            metadata={"name": service.name, "namespace": ns, "labels": labels},
            spec={
                "selector": {"app": service.name},
                "ports": [
                    {"name": "http", "port": HTTP_PORT, "targetPort": "http", "protocol": "TCP"},
                    {"name": "grpc", "port": GRPC_PORT, "targetPort": "grpc", "protocol": "TCP"},
                    {"name": "http-metrics", "port": TRITON_METRICS_PORT, "targetPort": "http-metrics", "protocol": "TCP"},
                ],
            },
            opts=endpoints,
        )

        configs_volume = None
        if a.model_configs:
            data = model_configs_data(a.model_configs)
            config_map = k8s.core.v1.ConfigMap(
                f"{name}-model-configs",
                metadata={"name": model_configs_name(service, data), "namespace": ns, "labels": labels},
                data=data,
                opts=resource_opts(self),
            )
            # The name as an output: each Deployment waits for the ConfigMap it mounts.
            configs_volume = model_configs_volume(list(a.model_configs), config_map.metadata["name"])

        # The key that opens Triton's closed API categories: only the platform knows it
        # (triton_api.restriction_flags). Whoever must call those APIs reads it from the Secret.
        admin_key = random.RandomPassword(f"{name}-admin-key", length=32, special=False,
                                          opts=pulumi.ResourceOptions(parent=self))
        admin_secret = k8s.core.v1.Secret(
            f"{name}-admin-key",
            metadata={"name": admin_key_secret_name(service.name), "namespace": ns, "labels": labels},
            type="Opaque",
            string_data={ADMIN_KEY_SECRET_KEY: admin_key.result},
            opts=resource_opts(self),
        )

        groups = {g.name: g for g in a.gpu_groups}
        estimates = rollout_estimates(a.gpu_groups, service, a.cold_start)
        deployments = {version.name: self._declare_version(name, a, version, groups[version.gpu.group],
                                                           estimates[version.gpu.group], sa, configs_volume,
                                                           admin_secret.metadata["name"])
                       for version in service.versions}

        credentials, secret_name, checked_by = basic_auth(self, name, service.name, ns, labels, service.auth, list(service.hosts),
                                              a.mesh.ingress_namespace,
                                              gateway_pods(service) if service.llm_routed else a.mesh.ingress_pod_labels)

        def custom(role: str, api_version: str, kind: str, spec: pulumi.Input[dict], depends_on=()):
            return k8s.apiextensions.CustomResource(
                f"{name}-{role}",
                api_version=api_version,
                kind=kind,
                metadata={"name": service.name, "namespace": ns, "labels": labels},
                spec=spec,
                opts=resource_opts(self, depends_on=depends_on),
            )

        custom("destinationrule", "networking.istio.io/v1", "DestinationRule", destination_rule_spec(service))
        if serves_openai(service):
            custom("sidecar", "networking.istio.io/v1", "Sidecar", sidecar_spec(service))
        if service.llm_routed:
            declare_llm_routing(self, name, service, labels, a.mesh.monitoring_namespace, a.gateway_tls_secret,
                                deployments, checked_by, a.gateway_annotations)
        else:
            custom("virtualservice", "networking.istio.io/v1", "VirtualService",
                   virtual_service_spec(service, a.mesh.gateway), depends_on=checked_by)
        selector = {"app": service.name}
        declare_mesh_security(custom, selector, metrics_ports(service), authorization_policy_spec(service, a.mesh.ingress_principal),
                              service.auth)
        k8s.networking.v1.NetworkPolicy(
            f"{name}-networkpolicy",
            metadata={"name": service.name, "namespace": ns, "labels": labels},
            spec=network_policy_spec(service, a.mesh.ingress_namespace, a.mesh.monitoring_namespace, a.mesh.ingress_pod_labels),
            opts=resource_opts(self),
        )
        custom("podmonitor", "monitoring.coreos.com/v1", "PodMonitor", pod_monitor_spec(selector, *metrics_port_names(service)))
        tuned = [v for v in service.versions if v.tuning is not None]
        if tuned:
            k8s.networking.v1.NetworkPolicy(
                f"{name}-tuning-networkpolicy",
                metadata={"name": f"{service.name}-tuning", "namespace": ns, "labels": labels},
                spec=tuning_network_policy_spec(service, tuned),
                opts=resource_opts(self),
            )

        scheme = "https" if a.mesh.tls else "http"
        self.urls = [f"{scheme}://{h}" for h in service.hosts]
        self.weights = {v.name: v.weight for v in service.versions}
        self.auth_secret = secret_name
        self.credentials = credentials
        self.register_outputs(
            {"urls": self.urls, "weights": self.weights, "authSecret": secret_name, "credentials": credentials}
        )

    def _declare_version(self, name, a: TritonServiceInputs, version: Version, group: NodeGroup,
                         estimate: GroupEstimate, sa, model_configs: Optional[tuple[dict, list[dict]]],
                         admin_key_secret: pulumi.Input[str]) -> k8s.apps.v1.Deployment:
        """The version's Deployment (and its HPA, PDB and tuning run); returns the Deployment."""
        service, weights = a.service, a.weights
        scaling = version.autoscaling or service.autoscaling
        repo = version.model_repository
        repository = model_repository_url(weights, repo.cache, repo.path)
        budget = version_rollout_budget(estimate, service, version, shutdown(service, version).grace_seconds)
        target = deployment_name(service, version)
        # A fixed name lets the HPA refer to the Deployment without waiting for its rollout.
        # A replacement (only a new selector, which app/version never changes) must then
        # delete the old object first: creating the new one under the same name would fail.
        rollout = pulumi.ResourceOptions(
            delete_before_replace=True, custom_timeouts=custom_timeouts(budget) if budget.seconds else None
        )
        deployment = k8s.apps.v1.Deployment(
            f"{name}-{version.name}",
            metadata={
                "name": target,
                "namespace": service.k8s_namespace,
                "labels": pod_labels(service, version),
                "annotations": {
                    **hardening.skip_annotations(*hardening.triton_workloads(cpu_limit=bool(version.resources.cpu_limit))),
                    **provenance_annotations(version),
                },
            },
            spec=deployment_spec(
                service,
                version,
                group,
                sa.metadata["name"],
                repository,
                s3_secret=weights.s3_secret_name if repo.cache == "s3" else None,
                claim=weights.claim_name if repo.cache == "fileShare" else None,
                autoscaled=scaling.enabled,
                mount_path=weights.mount_path,
                progress_deadline_seconds=wait_seconds(budget.create_seconds) if budget.create_seconds else None,
                model_configs=model_configs,
                admin_key_secret=admin_key_secret,
            ),
            # The weights' claim or Secret, the GPU operator: among what the component waits for.
            opts=pulumi.ResourceOptions.merge(resource_opts(self), rollout),
        )
        if version.tuning is not None:
            self._declare_tuning(name, a, version, group, repository)
        selector = {"app": service.name, "version": version.name}
        if scaling.enabled:
            k8s.autoscaling.v2.HorizontalPodAutoscaler(
                f"{name}-{version.name}-hpa",
                metadata={"namespace": service.k8s_namespace, "labels": pod_labels(service, version)},
                spec=hpa_spec(target, scaling, version.llm),
                opts=resource_opts(self),
            )
        min_replicas = scaling.min_replicas if scaling.enabled else version.replicas
        if min_replicas > 1:
            k8s.policy.v1.PodDisruptionBudget(
                f"{name}-{version.name}-pdb",
                metadata={"namespace": service.k8s_namespace, "labels": pod_labels(service, version)},
                spec={"maxUnavailable": 1, "selector": {"matchLabels": selector}},
                opts=resource_opts(self),
            )
        return deployment

    def _declare_tuning(self, name, a: TritonServiceInputs, version: Version, group: NodeGroup, repository):
        """The version's tuning run: Model Analyzer's (tuning/runs.py) or, with an LLM engine,
        GenAI-Perf's (tuning/llm_runs.py); its server, and where it publishes."""
        weights, repo = a.weights, version.model_repository
        claim = weights.claim_name if repo.cache == "fileShare" else None
        s3_secret = weights.s3_secret_name if repo.cache == "s3" else None
        llm = version.llm_backend is not None
        server, volumes = analysis_server(version, group, repository, s3_secret, claim, weights.mount_path, as_served=llm)
        if claim:
            # One volume of the claim: the server mounts it read-only, only the publish step writable.
            models = next(v for v in volumes if v["name"] == "models")
            models["persistentVolumeClaim"] = {"claimName": claim}
            cache_mount, upload = {"name": "models", "mountPath": weights.mount_path}, None
        else:
            cache_mount, upload = None, upload_container(weights.s3_bucket, repo.path, weights.s3_endpoint, s3_secret)
        if llm:
            tokenizer = (tokenizer_container(weights.s3_bucket, version, weights.s3_endpoint, s3_secret)
                         if upload is not None else None)
            declare_llm_tuning_run(self, name, a.service, version, group, server, volumes, cache_mount, upload, tokenizer,
                                   a.tuning_priority_class)
            return
        model_config = (model_config_container(weights.s3_bucket, version, weights.s3_endpoint, s3_secret)
                        if upload is not None else None)
        declare_tuning_run(self, name, a.service, version, group, server, volumes, cache_mount, upload, model_config,
                           a.tuning_priority_class)
