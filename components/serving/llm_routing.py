"""LLM routing: an LLM service's requests through the Gateway API Inference Extension.

Per LLM service (settings `Service.llm_routed`): a Gateway of class `istio` in the service's
namespace, which istiod deploys as `<gateway>-istio` (Deployment, Service, ServiceAccount;
istio 1.30.3 pilot/pkg/config/kube/gatewaycommon/gateway_utils.go GetDefaultName) with the
Gateway's own labels copied onto them (platformctl/gateway_pods.py), and an
HTTPRoute whose weighted backendRefs are the versions' InferencePools, the canary split.
Per version: a release of llm-d-router-gateway v0.10.0, which makes the version's
InferencePool (selecting its pods, targeting the OpenAI frontend's port) and the endpoint
picker the pool names. The chart ties one picker to one pool (`--pool-name <release>`,
charts/router/templates/_deployment.yaml), so each version has its own picker; Istio 1.30.3
calls only one of them per route rule, the last backend's (picker_order).

The picker runs without a sidecar: it serves ext_proc over its own TLS, which the chart's
DestinationRule (provider `istio`, templates/istio.yaml) tells the gateway to originate, and a
sidecar under the mesh's STRICT mTLS would refuse that. It reads the pods' `/metrics` on the
OpenAI port, which admits plaintext (mesh/security.py peer_authentication_spec: the port is
PERMISSIVE, and the AuthorizationPolicy admits any caller there for that path alone).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Mapping, Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s
import yaml

from inference_platform.core import controller_names, versions
from inference_platform.core.common import from_namespace, helm_release, resource_opts
from inference_platform.mesh.routes import BASIC_CREDENTIAL, envoy_duration
from inference_platform.mesh.security import ingress_source, jwt_rule
from inference_platform.serving.openai_frontend import METRICS_PATH, OPENAI_FRONTEND_PORT
from inference_platform.settings.serving import Service, Version, deployment_name

GATEWAY_CLASS = controller_names.ISTIO_GATEWAY_CLASS
# gateway-api v1.5.1 standard: the groups of the kinds the routing declares and refers to.
GATEWAY_GROUP = "gateway.networking.k8s.io"
INFERENCE_GROUP = "inference.networking.k8s.io"
# istio 1.30.3 files/kube-gateway.yaml: the label istiod puts on the gateway pods it deploys.
GATEWAY_NAME_LABEL = "gateway.networking.k8s.io/gateway-name"
# llm-d-router-gateway v0.10.0 charts/router: values.yaml epp.extProcPort, and the container
# port `metrics` of templates/_deployment.yaml (the Service's `http-metrics`).
ENDPOINT_PICKER_PORT = 9002
ENDPOINT_PICKER_METRICS_PORT = 9090
# The paths of Triton's OpenAI frontend (triton-inference-server/server r25.01
# python/openai/openai_frontend/frontend/fastapi/routers: chat.py, completions.py, models.py);
# its /metrics and /health/ready stay inside the cluster.
OPENAI_EXACT_PATHS = ("/v1/chat/completions", "/v1/completions")
OPENAI_MODELS_PATH = "/v1/models"
# Seconds between the gateway pod's drain and the kubelet's SIGKILL (as mesh.GATEWAY_SHUTDOWN_MARGIN).
GATEWAY_SHUTDOWN_MARGIN = 10


def pool_name(service: Service, version: Version) -> str:
    """The version's InferencePool and the release that makes it: `<service>-<version>`."""
    return deployment_name(service, version)


def endpoint_picker_name(service: Service, version: Version) -> str:
    """charts/router/templates/_helpers.tpl llm-d-router.name: `<release>-epp` (the release is at
    most 40 characters: serving.llm_routing_problems)."""
    return controller_names.endpoint_picker_name(pool_name(service, version))


def metrics_reader_secret_name(service: Service, version: Version) -> str:
    """The token Secret of the picker's ServiceMonitor, one per release: routerlib's default
    (charts/router/values.yaml monitoring.prometheus.auth.secretName) is one name for every
    release, and Helm refuses the second release's copy of it in the same namespace."""
    return controller_names.metrics_reader_secret_name(pool_name(service, version))


def endpoint_picker_pods(service: Service, version: Version) -> dict[str, str]:
    """_helpers.tpl llm-d-router.selectorLabels (inferencePool.create true): the picker's pods."""
    return {"llm-d-router-gateway": endpoint_picker_name(service, version)}


def gateway_name(service: Service) -> str:
    return service.name


def gateway_workload(service: Service) -> str:
    """The Deployment and ServiceAccount istiod deploys for the Gateway, `<gateway>-<class>`
    (istio 1.30.3 deploymentcontroller.go DeploymentName, ServiceAccount; gateway_utils.go
    GetDefaultName): the `source_workload` of the requests the gateway sends."""
    return controller_names.istio_gateway_workload(gateway_name(service), GATEWAY_CLASS)


def inference_pool_service_name(service: Service, version: Version) -> str:
    """The headless Service istiod keeps for the version's InferencePool and routes the gateway's
    requests to, `<pool>-ip-<first 8 hex digits of sha256(pool)>`, the pool's name cut to keep it
    within 63 characters (inferencepool_collection.go InferencePoolServiceName, generateHash;
    conversion.go buildDestination): the `destination_service` of the gateway's requests."""
    return controller_names.inference_pool_service_name(pool_name(service, version))


def gateway_pods(service: Service) -> dict[str, str]:
    return {GATEWAY_NAME_LABEL: gateway_name(service)}


# The labels the service's selectors choose its pods by (triton.py: Service, NetworkPolicy, mesh
# policies, PodMonitor): never on the Gateway, whose labels istiod copies onto its own pods.
WORKLOAD_SELECTOR_LABELS = ("app", "version")


def gateway_labels(labels: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in labels.items() if k not in WORKLOAD_SELECTOR_LABELS}


def gateway_principal(service: Service) -> str:
    """The SPIFFE principal of the gateway's pods: istiod names their ServiceAccount
    `<gateway>-<class>` (deploymentcontroller.go TemplateInput.ServiceAccount)."""
    return f"cluster.local/ns/{service.k8s_namespace}/sa/{gateway_workload(service)}"


# --------------------------------------------------------------------------- endpoint picker


# The picker's own name for the engine whose metrics it reads (core-metrics-extractor engineConfigs).
PICKER_ENGINE = "triton-openai"


def endpoint_picker_config() -> dict[str, Any]:
    """The picker's plugins (llm-d-router v0.10.0; every type registered in cmd/epp/runner/runner.go):
    it parses the OpenAI requests the frontend serves and scores pods on what the picker itself
    knows, since the engine behind Triton's OpenAI frontend exports no load gauge it could read.

    - `openai-parser` (pkg/epp/framework/plugins/requesthandling/parsers/openai): the frontend speaks
      OpenAI, so the prompt is read; `passthrough-parser`, the chart's choice for `modelServers.type:
      triton` (charts/router/templates/_config.yaml), leaves the prefix-cache scorer blind
      (parsers/passthrough/README.md).
    - `prefix-cache-scorer` (scheduling/scorer/prefix): the pod that served the longest shared prefix,
      by the approx-prefix-cache-producer and the tokenizer-free `estimate` token-producer the picker
      adds for it (pkg/epp/datalayer/data_graph.go CreateMissingDataProducers;
      requestcontrol/dataproducer/tokenizer/README.md).
    - `active-request-scorer` (scheduling/scorer/activerequest): the fewest requests in flight, counted
      by the picker's inflight-load-producer (added the same way), in place of the chart's queue and
      KV-cache scorers: the vLLM backend at r25.01 exports no running, waiting or KV gauge
      (tests/catalogues/vllm-backend.txt), and the chart's `triton` engine reads
      `nv_inference_pending_request_count`, near zero in front of vLLM, as the queue, the cumulative
      counter `nv_inference_exec_count` as running requests, and no KV usage
      (datalayer/extractor/metrics/factories.go defaultEngineConfigs). The load scorer keeps the
      weight the two had together.
    - `metrics-data-source` with no `port`: the pool's target port, the frontend's 9000, whose
      `/metrics` is Triton's Prometheus text (routers/observability.py); the frontend opens no 8002
      (openai_frontend.py). It feeds the pool's gauges (`inference_pool_average_queue_size`) and the
      picker's poll errors; its extractor reads the queue only (an empty spec turns a metric off:
      extractor/metrics/mapping.go).
    """
    return {
        "apiVersion": "llm-d.ai/v1alpha1",
        "kind": "EndpointPickerConfig",
        "plugins": [
            {"type": "openai-parser"},
            {"type": "active-request-scorer"},
            {"type": "prefix-cache-scorer"},
            {"type": "metrics-data-source", "parameters": {"scheme": "http", "path": METRICS_PATH}},
            {"type": "core-metrics-extractor", "parameters": {
                "defaultEngine": PICKER_ENGINE,
                "engineConfigs": [{"name": PICKER_ENGINE, "queuedRequestsSpec": "nv_inference_pending_request_count",
                                   "runningRequestsSpec": "", "kvUsageSpec": ""}]}},
        ],
        "schedulingProfiles": [{"name": "default", "plugins": [
            {"pluginRef": "active-request-scorer", "weight": 4},
            {"pluginRef": "prefix-cache-scorer", "weight": 3},
        ]}],
        "requestHandler": {"parsers": [{"pluginRef": "openai-parser"}]},
    }


ENDPOINT_PICKER_CONFIG_FILE = "platform-plugins.yaml"


def endpoint_picker_values(service: Service, version: Version) -> dict[str, Any]:
    """The version's llm-d-router-gateway values: its pool, its picker and the picker's
    ServiceMonitor (the chart's, with the token the picker's /metrics asks for)."""
    return {
        "provider": {"name": GATEWAY_CLASS},
        "router": {
            "modelServers": {
                "type": "triton",
                "protocol": "http",
                "targetPorts": [{"number": OPENAI_FRONTEND_PORT}],
                "matchLabels": {"app": service.name, "version": version.name},
            },
            "inferencePool": {"failureMode": service.llm_routing.failure_mode},
            "epp": {
                "pluginsConfigFile": ENDPOINT_PICKER_CONFIG_FILE,
                "pluginsCustomConfig": {ENDPOINT_PICKER_CONFIG_FILE: yaml.safe_dump(endpoint_picker_config(), sort_keys=False)},
                # No sidecar: see the module's docstring (istio pkg/kube/inject/inject.go
                # injectRequired reads this annotation).
                "podAnnotations": {"sidecar.istio.io/inject": "false"},
            },
            "monitoring": {"prometheus": {"enabled": True,
                                          "auth": {"secretName": metrics_reader_secret_name(service, version)}}},
        },
    }


def endpoint_picker_network_policy_spec(service: Service, version: Version, monitoring_namespace: str) -> dict:
    """The picker admits the gateway on ext_proc and Prometheus on its metrics; nothing else."""
    return {
        "podSelector": {"matchLabels": endpoint_picker_pods(service, version)},
        "policyTypes": ["Ingress"],
        "ingress": [
            {"from": [{"podSelector": {"matchLabels": gateway_pods(service)}}],
             "ports": [{"protocol": "TCP", "port": ENDPOINT_PICKER_PORT}]},
            {"from": from_namespace(monitoring_namespace),
             "ports": [{"protocol": "TCP", "port": ENDPOINT_PICKER_METRICS_PORT}]},
        ],
    }


# --------------------------------------------------------------------------- gateway and route


def gateway_parameters(service: Service) -> dict[str, str]:
    """Overlays istiod applies to the gateway it deploys (kube-gateway.yaml, through
    `infrastructure.parametersRef`; deploymentcontroller.go supportedOverlays): two replicas,
    one kept through a node drain, and a drain as long as the longest request, so a stopping
    gateway pod does not cut a stream (Istio's default drain is 5 s, the pod's grace 30 s)."""
    drain = service.route_timeout_whole_seconds
    deployment = {"spec": {"replicas": 2, "template": {
        # istio/api mesh/v1alpha1/proxy.proto termination_drain_duration.
        "metadata": {"annotations": {"proxy.istio.io/config": f"terminationDrainDuration: {drain}s"}},
        "spec": {"terminationGracePeriodSeconds": drain + GATEWAY_SHUTDOWN_MARGIN},
    }}}
    pdb = {"spec": {"minAvailable": 1}}
    return {"deployment": yaml.safe_dump(deployment, sort_keys=True),
            "podDisruptionBudget": yaml.safe_dump(pdb, sort_keys=True)}


def gateway_parameters_name(service: Service, data: dict[str, str]) -> str:
    """Named after its content: a changed ConfigMap is created beside the old one and the
    Gateway moves to it, where a replaced one would be deleted first and istiod would
    redeploy the gateway without its overlays meanwhile."""
    digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
    return f"{gateway_name(service)}-gateway-{digest[:10]}"


def gateway_spec(service: Service, parameters: str, tls_secret: Optional[tuple[str, str]],
                 annotations: Mapping[str, str] = {}) -> dict:
    """Listeners for the service's hosts only, routes from its own namespace only; HTTPS with
    the ingress gateway's certificate (`tls_secret`: namespace, name) where the mesh has TLS.
    `annotations` go onto the objects istiod deploys, its LoadBalancer Service among them (the
    mesh's gateway annotations, e.g. keeping the floating IP): `infrastructure.annotations`, which
    istio 1.30.3 deploymentcontroller.go extractInfrastructureMetadata (:520-540) puts in place of
    a copy of the Gateway's own and kube-gateway.yaml writes on each object's metadata."""
    listeners = []
    for i, host in enumerate(service.hosts):
        allowed = {"namespaces": {"from": "Same"}}
        if tls_secret is None:
            listeners.append({"name": f"http-{i}", "hostname": host, "port": 80, "protocol": "HTTP", "allowedRoutes": allowed})
            continue
        namespace, name = tls_secret
        listeners.append({"name": f"https-{i}", "hostname": host, "port": 443, "protocol": "HTTPS", "allowedRoutes": allowed,
                          "tls": {"mode": "Terminate",
                                  "certificateRefs": [{"group": "", "kind": "Secret", "name": name, "namespace": namespace}]}})
    infrastructure = {"parametersRef": {"group": "", "kind": "ConfigMap", "name": parameters},
                      **({"annotations": dict(annotations)} if annotations else {})}
    return {"gatewayClassName": GATEWAY_CLASS, "listeners": listeners, "infrastructure": infrastructure}


def certificate_grant_spec(service: Service, secret_name: str) -> dict:
    """A ReferenceGrant in the certificate's namespace: the service's Gateway may read it."""
    return {"from": [{"group": GATEWAY_GROUP, "kind": "Gateway", "namespace": service.k8s_namespace}],
            "to": [{"group": "", "kind": "Secret", "name": secret_name}]}


def picker_order(versions: Sequence[Version]) -> list[Version]:
    """The versions with weight > 0 in the order their pools go into the route's one rule: by
    weight, ascending, the highest-weight (stable) pool last.

    Istio 1.30.3 gives a rule one endpoint picker, the last backendRef's: buildHTTPDestination
    (pilot/pkg/config/kube/gateway/conversion.go:953-957) keeps `ipCfg = ipconfig` of each
    backend in turn, and route.go:514-521 attaches that single ExtProcPerRoute to the whole
    route. The picker answers 503 for every request when its pool has no Ready pod (llm-d-router
    v0.10.0 pkg/epp/requestcontrol/director.go), so with the canary's picker last an empty
    canary takes down the stable version's share too (istio/istio#61594, fixed by #61601 after
    1.30.3). With the stable pool's picker last, an empty canary costs only its own share (its
    cluster has no endpoint: 503 "no healthy upstream"). Of versions with equal weights the one
    listed first (the older, by the stack file's convention) goes last.
    """
    routed = [(i, v) for i, v in enumerate(versions) if v.weight > 0]
    return [v for _, v in sorted(routed, key=lambda iv: (iv[1].weight, -iv[0]))]


def http_route_spec(service: Service) -> dict:
    """The OpenAI paths to the versions' pools, split by their canary weights (a version at
    weight 0 gets no entry, as in the classic VirtualService); every other path gets 404 from
    the gateway. `timeouts.request` bounds a whole stream: the service's timeoutSeconds. The
    pools go in picker_order: the stable version's picker is the one Istio calls."""
    matches = [{"path": {"type": "Exact", "value": p}} for p in OPENAI_EXACT_PATHS]
    matches.append({"path": {"type": "PathPrefix", "value": OPENAI_MODELS_PATH}})
    if service.auth.mode == "basic":
        # As the classic routes (mesh/routes.py BASIC_CREDENTIAL): one `Basic <base64>` value, or no
        # route. The gateway's basic_auth filter (mesh/basic_auth.py, applied to every gateway
        # from Istio's root namespace) answers 401 with the challenge itself before routing.
        regex = BASIC_CREDENTIAL["authorization"]["regex"]
        for match in matches:
            match["headers"] = [{"type": "RegularExpression", "name": "Authorization", "value": regex}]
    backends = [{"group": INFERENCE_GROUP, "kind": "InferencePool", "name": pool_name(service, v), "weight": v.weight}
                for v in picker_order(service.versions)]
    return {
        "parentRefs": [{"group": GATEWAY_GROUP, "kind": "Gateway", "name": gateway_name(service)}],
        "hostnames": list(service.hosts),
        "rules": [{"matches": matches, "backendRefs": backends,
                   "timeouts": {"request": envoy_duration(service.timeout_seconds)}}],
    }


def gateway_target(service: Service) -> list[dict]:
    return [{"group": GATEWAY_GROUP, "kind": "Gateway", "name": gateway_name(service)}]


def gateway_jwt_specs(service: Service) -> tuple[dict, dict]:
    """With jwt auth, the gateway checks tokens (RequestAuthentication) and lets through only
    requests that carry a valid one (AuthorizationPolicy), both bound to the Gateway by
    targetRefs (istio/api security/v1 request_authentication.proto, authorization_policy.proto)."""
    jwt = service.auth.jwt
    # Kept for the pods, whose policy asks for a request principal again: without it the gateway
    # drops the token once checked (istio 1.30.3 pilot/pkg/security/authn/policy_applier.go
    # `Forward: jwtRule.ForwardOriginalToken`, default false) and every request ends 403 there.
    authentication = {"targetRefs": gateway_target(service), "jwtRules": [jwt_rule(jwt, forwardOriginalToken=True)]}
    authorization = {"targetRefs": gateway_target(service), "action": "ALLOW",
                     "rules": [{"from": [{"source": {"requestPrincipals": ["*"]}}]}]}
    return authentication, authorization


# --------------------------------------------------------------------------- the pods' side


def pod_authorization_rules(service: Service) -> list[dict]:
    """The AuthorizationPolicy rules of an LLM service's pods: the gateway may call the OpenAI
    paths on the frontend's port (with jwt auth, only with a token the pods' RequestAuthentication accepts)."""
    paths = [*OPENAI_EXACT_PATHS, OPENAI_MODELS_PATH, f"{OPENAI_MODELS_PATH}/*"]
    return [{"from": [{"source": ingress_source(service.auth, gateway_principal(service))}],
             "to": [{"operation": {"ports": [str(OPENAI_FRONTEND_PORT)], "paths": paths}}]}]


def pod_network_rules(service: Service) -> list[dict]:
    """The NetworkPolicy rules of an LLM service's pods: the gateway on the frontend's port, and
    the versions' pickers there too, for `/metrics` (endpoint_picker_config; the service's
    AuthorizationPolicy lets any caller GET only that path on the port, and the port admits the
    pickers' plaintext: they run without a sidecar)."""
    pickers = [{"podSelector": {"matchLabels": endpoint_picker_pods(service, v)}} for v in service.versions]
    return [{"from": [{"podSelector": {"matchLabels": gateway_pods(service)}}],
             "ports": [{"protocol": "TCP", "port": OPENAI_FRONTEND_PORT}]},
            {"from": pickers, "ports": [{"protocol": "TCP", "port": OPENAI_FRONTEND_PORT}]}]


# --------------------------------------------------------------------------- resources


def declare_llm_routing(parent: pulumi.Resource, name: str, service: Service, labels: dict[str, str],
                        monitoring_namespace: str, tls_secret: Optional[str],
                        deployments: Mapping[str, pulumi.Resource], checked_by: Sequence[pulumi.Resource] = (),
                        gateway_annotations: Mapping[str, str] = {}) -> None:
    """An LLM service's routing, as children of its TritonService `parent`: per version the
    router release and its picker's NetworkPolicy; the Gateway with its parameters (and the
    grant to its certificate, `tls_secret` as `<namespace>/<name>`, and `gateway_annotations` for
    what istiod deploys), the HTTPRoute, and with jwt auth the Gateway's token check.
    `deployments`: the versions' Deployments, by version name."""
    ns = service.k8s_namespace

    def meta(object_name: str, namespace: str = ns) -> dict:
        return {"name": object_name, "namespace": namespace, "labels": labels}

    def custom(role: str, api_version: str, kind: str, metadata: dict, spec: pulumi.Input[dict], *deps) -> pulumi.Resource:
        return k8s.apiextensions.CustomResource(f"{name}-{role}", api_version=api_version, kind=kind, metadata=metadata,
                                                spec=spec, opts=resource_opts(parent, depends_on=deps))

    pools = []
    for version in service.versions:
        pools.append(helm_release(f"{name}-{version.name}-router", pool_name(service, version), versions.LLM_D_ROUTER, ns,
                                  endpoint_picker_values(service, version), resource_opts(parent)))
        k8s.networking.v1.NetworkPolicy(
            f"{name}-{version.name}-router-networkpolicy", metadata=meta(endpoint_picker_name(service, version)),
            spec=endpoint_picker_network_policy_spec(service, version, monitoring_namespace), opts=resource_opts(parent))
    data = gateway_parameters(service)
    parameters = k8s.core.v1.ConfigMap(f"{name}-gateway-parameters", metadata=meta(gateway_parameters_name(service, data)),
                                       data=data, opts=resource_opts(parent))
    certificate = None
    if tls_secret is not None:
        namespace, secret = tls_secret.split("/", 1)
        certificate = (namespace, secret)
        custom("gateway-certificate-grant", f"{GATEWAY_GROUP}/v1", "ReferenceGrant",
               meta(f"{ns}-{service.name}-gateway", namespace), certificate_grant_spec(service, secret))
    # istiod copies a Gateway's labels onto the pods it deploys for it (module docstring): with the
    # workload's `app` they would fall under the pods' NetworkPolicy, mesh policies and Service.
    gateway_meta = {**meta(gateway_name(service)), "labels": gateway_labels(labels)}
    gateway = custom("gateway", f"{GATEWAY_GROUP}/v1", "Gateway", gateway_meta,
                     gateway_spec(service, parameters.metadata["name"], certificate, gateway_annotations))
    # The route's backends are the releases' pools: created after them, it never names a missing pool.
    # With Basic Auth, after the filter and policy that check the credential it admits (`checked_by`).
    # And after the rollout of every version it gives weight: a picker whose pool has no Ready pod
    # answers 503 (llm-d-router v0.10.0 pkg/epp/requestcontrol/director.go, no endpoint candidates;
    # its pod reconciler admits Ready pods only), so a version added at weight > 0 would fail its
    # share for its whole cold start. Pulumi applies the route's new weights once those Deployments
    # are Ready (their customTimeouts cover the cold start); a weight shift alone does not wait.
    routed = [deployments[v.name] for v in picker_order(service.versions)]
    custom("httproute", f"{GATEWAY_GROUP}/v1", "HTTPRoute", meta(service.name), http_route_spec(service), gateway, *pools,
           *checked_by, *routed)
    if service.auth.mode == "jwt":
        authentication, authorization = gateway_jwt_specs(service)
        custom("gateway-requestauthentication", "security.istio.io/v1", "RequestAuthentication",
               meta(f"{service.name}-gateway"), authentication)
        custom("gateway-authorizationpolicy", "security.istio.io/v1", "AuthorizationPolicy",
               meta(f"{service.name}-gateway"), authorization)
