"""The objects that appear at `pulumi up` time without a Pulumi resource declaring them, by
(API group, kind, namespace, name): what istiod deploys for a Gateway and keeps for an
InferencePool, what KubeRay makes for a RayService, and what the endpoint picker's chart
installs for a router release. A stack name
that gives a declared object one of these names would have two writers for one object (and, for a
ServiceAccount, another workload running under the identity a policy admits), so the settings and
the plan check against this one model (settings/controller_clashes.py, platformctl/objects.py).
"""

from __future__ import annotations

import hashlib
from typing import Iterable

ObjectKey = tuple[str, str, str, str]
"""(API group, kind, namespace, name); "" for the core group and for a cluster-scoped object's namespace."""

ISTIO_GATEWAY_CLASS = "istio"
# istio 1.30.3 deploymentcontroller.go supportedOverlays/requiredOverlays (:667-678, :730-732): the
# HorizontalPodAutoscaler and PodDisruptionBudget of kube-gateway.yaml are made only when an overlay
# of the class defaults or the Gateway's parametersRef ConfigMap has their key.
GATEWAY_OVERLAY_KINDS = {"horizontalPodAutoscaler": ("autoscaling", "HorizontalPodAutoscaler"),
                         "podDisruptionBudget": ("policy", "PodDisruptionBudget")}


def istio_gateway_workload(gateway: str, gateway_class: str = ISTIO_GATEWAY_CLASS) -> str:
    """The name of the Deployment, Service and ServiceAccount istiod deploys for a Gateway:
    `<gateway>-<class>` (istio 1.30.3 pilot/pkg/config/kube/gatewaycommon/gateway_utils.go:36-41
    GetDefaultName; deploymentcontroller.go:396,428-429 DeploymentName and ServiceAccount, which
    only the Gateway's gateway.istio.io/name-override and -service-account annotations change)."""
    return f"{gateway}-{gateway_class}"


def istio_gateway_objects(namespace: str, gateway: str, overlays: Iterable[str] = (),
                          gateway_class: str = ISTIO_GATEWAY_CLASS) -> list[ObjectKey]:
    """What istiod deploys for a Gateway (istiod chart files/kube-gateway.yaml): ServiceAccount,
    Deployment and Service `<gateway>-<class>`, and the autoscaler and disruption budget of that
    name when `overlays` (the keys of its parameters ConfigMap) ask for them."""
    name = istio_gateway_workload(gateway, gateway_class)
    keys = [("", "ServiceAccount", namespace, name), ("apps", "Deployment", namespace, name),
            ("", "Service", namespace, name)]
    return keys + [(group, kind, namespace, name) for overlay, (group, kind) in GATEWAY_OVERLAY_KINDS.items()
                   if overlay in overlays]


# istio 1.30.3 pilot/pkg/config/kube/gateway/inferencepool_collection.go:42-43 maxServiceNameLength, hashSize.
SHADOW_HASH_SIZE, SHADOW_NAME_LIMIT = 8, 63


def inference_pool_service_name(pool: str) -> str:
    """The headless Service istiod keeps for an InferencePool and routes the gateway's requests to,
    `<pool>-ip-<first 8 hex digits of sha256(pool)>`, the pool's name cut to keep it within 63
    characters (inferencepool_collection.go:487-510 generateHash, InferencePoolServiceName)."""
    suffix = "-ip-" + hashlib.sha256(pool.encode()).hexdigest()[:SHADOW_HASH_SIZE]
    return pool[:SHADOW_NAME_LIMIT - len(suffix)] + suffix


def inference_pool_objects(namespace: str, pool: str) -> list[ObjectKey]:
    return [("", "Service", namespace, inference_pool_service_name(pool))]


def endpoint_picker_name(release: str) -> str:
    """llm-d-router-gateway v0.10.0 charts/router/templates/_helpers.tpl llm-d-router.name: `<release>-epp`."""
    return f"{release}-epp"


def metrics_reader_secret_name(release: str) -> str:
    """The token Secret of a release's picker ServiceMonitor, as the platform names it per release."""
    return f"{endpoint_picker_name(release)}-metrics-reader"


def router_release_objects(namespace: str, release: str) -> list[ObjectKey]:
    """What a release of llm-d-router-gateway v0.10.0 installs, as the platform configures it
    (inferencePool.create, the Istio provider, the picker's ServiceMonitor): the InferencePool
    `<release>` and the picker's objects (charts/router/templates: _helpers.tpl llm-d-router.name
    and cluster-rbac-name). tests/conformance/test_release_objects.py holds it to `helm template`."""
    picker = endpoint_picker_name(release)
    objects = [("inference.networking.k8s.io", "InferencePool", namespace, release),
               ("", "ServiceAccount", namespace, picker), ("", "ConfigMap", namespace, picker),
               ("", "Service", namespace, picker), ("apps", "Deployment", namespace, picker),
               ("networking.istio.io", "DestinationRule", namespace, picker),
               ("monitoring.coreos.com", "ServiceMonitor", namespace, f"{picker}-monitor"),
               ("", "Secret", namespace, metrics_reader_secret_name(release)),
               ("rbac.authorization.k8s.io", "ClusterRole", "", f"{release}-{namespace}-epp"),
               ("rbac.authorization.k8s.io", "ClusterRoleBinding", "", f"{release}-{namespace}-epp")]
    for role in (f"{picker}-sa", f"{picker}-non-sa"):
        objects += [("rbac.authorization.k8s.io", "Role", namespace, role),
                    ("rbac.authorization.k8s.io", "RoleBinding", namespace, role)]
    return objects


def rayservice_objects(namespace: str, rayservice: str) -> list[ObjectKey]:
    """The Services KubeRay v1.7.0 keeps for a RayService whatever cluster is active: `<name>-head-svc`
    and `<name>-serve-svc` (ray-operator/controllers/ray/utils/util.go:316-320 GenerateHeadServiceName
    for a RayService, :349-351 GenerateServeServiceName; common/service.go:153,207). Its RayClusters
    are `<name>-<5 random characters>` (util.go:369-371), a name no check can foresee."""
    return [("", "Service", namespace, f"{rayservice}-head-svc"), ("", "Service", namespace, f"{rayservice}-serve-svc")]


def describe(key: ObjectKey) -> str:
    group, kind, namespace, name = key
    kind = f"{kind}.{group}" if group else kind
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"
