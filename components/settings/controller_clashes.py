"""Names the stack chooses that are names of objects made at `up` time.

istiod deploys `<gateway>-istio` for an LLM service's Gateway and keeps `<pool>-ip-<hash>` for
each InferencePool; each LLM version's router release installs `<pool>-epp` and the pool;
KubeRay keeps `<graph>-head-svc` and `<graph>-serve-svc` for a Ray graph's RayService
(core/controller_names.py). A service, version or graph whose own objects get one of those names
in the same namespace shares the object with its maker. For the ServiceAccount that is an
identity: a service named `<gateway>-istio` beside an LLM service would run its pods as the
gateway, the one principal the LLM pods' AuthorizationPolicy admits from the gateway. Refused
here, in the stack's checks and in TritonService's own, before any object exists; the plan checks
the rendered objects the same way (platformctl/objects.py check_unique_objects).
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

from inference_platform.core import controller_names
from inference_platform.core.controller_names import ObjectKey, describe

from .errors import KeyPath
from .graphs import Graph, graph_workload
from .serving import Service, deployment_name
from .stack import Settings

ALLOWED = ("allowed: a name none of whose objects is one made at `up` time in its namespace: `<gateway>-istio` "
           "for an LLM service's Gateway (istiod), `<service>-<version>-epp` and the InferencePool `<service>-<version>` "
           "of an LLM version (its router release), `<pool>-ip-<hash>` (istiod), `<graph>-head-svc` and "
           "`<graph>-serve-svc` of a Ray graph (KubeRay)")


class Named(NamedTuple):
    key: ObjectKey
    path: KeyPath
    what: str


def _item(path: KeyPath, name: str) -> str:
    return f"{path[0]}[{name}]"


def _made(services: Sequence[tuple[KeyPath, Service]], ray: Sequence[tuple[KeyPath, Graph]]) -> list[Named]:
    """What controllers and the router releases make for the LLM services and the Ray graphs, and
    the key that names it."""
    made = [Named(key, (*path, "name"), f"what KubeRay makes for the RayService of {_item(path, g.name)}")
            for path, g in ray for key in controller_names.rayservice_objects(g.k8s_namespace, g.name)]
    for path, svc in services:
        if not svc.llm_routed:
            continue
        ns = svc.k8s_namespace
        gateway = f"what istiod deploys for the Gateway of {_item(path, svc.name)}"
        # The platform's Gateway asks for the disruption budget (serving/llm_routing.py gateway_parameters).
        made += [Named(key, (*path, "name"), gateway)
                 for key in controller_names.istio_gateway_objects(ns, svc.name, ("podDisruptionBudget",))]
        for vi, version in enumerate(svc.versions):
            pool = deployment_name(svc, version)
            release = f"what the router release of {_item(path, svc.name)}.versions[{version.name}] ({pool!r}) installs"
            made += [Named(key, (*path, "versions", vi, "name"), release)
                     for key in controller_names.router_release_objects(ns, pool)]
            made += [Named(key, (*path, "versions", vi, "name"), f"the Service istiod keeps for InferencePool {pool!r}")
                     for key in controller_names.inference_pool_objects(ns, pool)]
    return made


def _declared(services: Sequence[tuple[KeyPath, Service]], graphs: Sequence[tuple[KeyPath, Graph]]) -> list[Named]:
    """The objects a service's (or an ensemble graph's) own names give it: its ServiceAccount and
    Service `<service>` and a Deployment `<service>-<version>` per version (serving/triton.py); a
    Ray graph's Service `<graph>-ray` (serving/graphs.py)."""
    declared = []
    for path, svc in services:
        ns = svc.k8s_namespace
        declared += [Named(("", "ServiceAccount", ns, svc.name), (*path, "name"), "its ServiceAccount"),
                     Named(("", "Service", ns, svc.name), (*path, "name"), "its Service")]
        declared += [Named(("apps", "Deployment", ns, deployment_name(svc, v)), (*path, "versions", vi, "name"),
                           "its Deployment") for vi, v in enumerate(svc.versions)]
    for path, graph in graphs:
        declared.append(Named(("", "Service", graph.k8s_namespace, f"{graph.name}-ray"), (*path, "name"), "its Service"))
    return declared


def controller_name_problems(services: Sequence[Service], graphs: Sequence[Graph] = (),
                             service_path: str = "services", graph_path: str = "graphs") -> list[tuple[KeyPath, str]]:
    """Every service, version or graph name that gives one of its objects the name of an object
    made at `up` time, and every object two makers would make; one line each."""
    served = [((service_path, i), s) for i, s in enumerate(services)]
    served += [((graph_path, i), graph_workload(g)) for i, g in enumerate(graphs) if g.placement == "ensemble"]
    ray = [((graph_path, i), g) for i, g in enumerate(graphs) if g.placement == "ray"]
    made: dict[ObjectKey, Named] = {}
    problems: list[tuple[KeyPath, str]] = []
    for m in _made(served, ray):
        if m.key in made and made[m.key].what != m.what:
            problems.append((m.path, f"{describe(m.key)} would be made twice, by {m.what} and by {made[m.key].what}; {ALLOWED}"))
        made.setdefault(m.key, m)
    for d in _declared(served, ray):
        if d.key not in made:
            continue
        name = describe(d.key)
        identity = (" (its pods would run under that identity, which the LLM pods' AuthorizationPolicy admits as the "
                    "gateway's)" if d.key[1] == "ServiceAccount" and "Gateway" in made[d.key].what else "")
        problems.append((d.path, f"gives {d.what} the name of {name}, {made[d.key].what}{identity}; {ALLOWED}"))
    # One line per key: its first clash (a ServiceAccount's before the rest).
    first: dict[KeyPath, str] = {}
    for path, why in problems:
        first.setdefault(path, why)
    return list(first.items())


def stack_controller_name_problems(s: Settings) -> list[tuple[KeyPath, str]]:
    """The stack's check: every service and graph of the stack together."""
    return controller_name_problems(s.services, s.graphs)
