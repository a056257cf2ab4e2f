"""A real Kubernetes control plane for tests/real: kube-apiserver, etcd, kube-controller-manager and
kube-scheduler started by kwokctl (binary runtime) inside a network namespace of the test's own that
has only `lo`, with KWOK nodes that stand for each node group's machines.

What a cloud or a node's software would do, and KWOK does not, is done here and named as such:
`nodes_for` gives each group's nodes the labels, taints and GPU resources that Magnum, Node Feature
Discovery and the NVIDIA device plugin would put on them; `CloudStandIn` gives LoadBalancer Services an
address, binds claims to volumes, writes a RayService's status and answers aggregated APIs' discovery.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional

# Capacity of every KWOK node: enough that no pod of ours waits on CPU or memory; the GPU resources
# (what limits placement) come from the group's settings.
NODE_CPU = "64"
NODE_MEMORY = "512Gi"
NODE_PODS = "250"


class RealToolError(RuntimeError):
    """A real tool exited non-zero: the command, its exit code and the end of its output."""


@dataclass
class NetNamespace:
    """A network namespace holding only `lo` (up): nothing run inside it reaches another host."""

    name: str

    @classmethod
    def create(cls, name: str) -> "NetNamespace":
        subprocess.run(["ip", "netns", "delete", name], capture_output=True)
        subprocess.run(["ip", "netns", "add", name], check=True)
        subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True)
        return cls(name)

    def prefix(self) -> list[str]:
        return ["ip", "netns", "exec", self.name]

    def delete(self) -> None:
        subprocess.run(["ip", "netns", "delete", self.name], capture_output=True)


def run(cmd: list[str], *, env: dict[str, str], cwd: Optional[Path] = None, timeout: float = 600,
        check: bool = True, log: Optional[Path] = None, input: Optional[str] = None) -> subprocess.CompletedProcess:
    """Runs a command; its output goes to `log` (appended) and, on failure, into the error."""
    started = time.monotonic()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, input=input)
    if log is not None:
        with log.open("a") as f:
            f.write(f"$ {' '.join(cmd)}   # rc {proc.returncode}, {time.monotonic() - started:.1f} s\n{proc.stdout}{proc.stderr}\n")
    if check and proc.returncode != 0:
        tail = (proc.stdout + proc.stderr)[-6000:]
        raise RealToolError(f"{' '.join(cmd[-6:])} exited {proc.returncode}:\n{tail}")
    return proc


@dataclass
class KwokCluster:
    """One kwokctl cluster in a network namespace; `kubectl` runs inside it."""

    name: str
    netns: NetNamespace
    bindir: Path
    workdir: Path
    log: Path
    env: dict[str, str] = field(default_factory=dict)

    @property
    def kubeconfig(self) -> Path:
        return self.workdir / "clusters" / self.name / "kubeconfig.yaml"

    def _env(self) -> dict[str, str]:
        return {**os.environ, "PATH": f"{self.bindir}:{os.environ['PATH']}", "KWOK_WORKDIR": str(self.workdir),
                "KUBECONFIG": str(self.kubeconfig), **self.env}

    def config(self) -> str:
        b = self.bindir
        return textwrap.dedent(f"""\
            kind: KwokctlConfiguration
            apiVersion: config.kwok.x-k8s.io/v1alpha1
            options:
              runtime: binary
              bindAddress: 127.0.0.1
              kubeApiserverBinary: {b}/kube-apiserver
              kubeControllerManagerBinary: {b}/kube-controller-manager
              kubeSchedulerBinary: {b}/kube-scheduler
              kubectlBinary: {b}/kubectl
              etcdBinary: {b}/etcd
              kwokControllerBinary: {b}/kwok
            componentsPatches:
              - name: kube-apiserver
                extraArgs:
                  - key: advertise-address
                    value: 127.0.0.1
                  # No webhook server can run on KWOK nodes: the charts' admission webhooks (Istio's
                  # injector, Kueue's, Trainer's) would refuse or time out every create they match.
                  - key: disable-admission-plugins
                    value: MutatingAdmissionWebhook,ValidatingAdmissionWebhook
            """)

    def create(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        config = self.workdir / "kwokctl.yaml"
        config.write_text(self.config())
        run([*self.netns.prefix(), str(self.bindir / "kwokctl"), "create", "cluster", "--name", self.name,
             "--config", str(config), "--wait", "2m"], env=self._env(), log=self.log, timeout=300)

    def delete(self) -> None:
        run([*self.netns.prefix(), str(self.bindir / "kwokctl"), "delete", "cluster", "--name", self.name],
            env=self._env(), log=self.log, check=False, timeout=120)

    def kubectl(self, *args: str, input: Optional[str] = None, check: bool = True, timeout: float = 120,
                quiet: bool = False) -> str:
        return run([*self.netns.prefix(), str(self.bindir / "kubectl"), *args], env=self._env(),
                   log=None if quiet else self.log, input=input, check=check, timeout=timeout).stdout

    def apply(self, objects: Iterable[dict]) -> None:
        self.kubectl("apply", "--server-side", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                                            "items": list(objects)}))

    def get(self, *what: str) -> list[dict[str, Any]]:
        return json.loads(self.kubectl("get", *what, "-o", "json", quiet=True))["items"]


def kwok_node(name: str, labels: dict[str, str], taints: list[dict], extended: dict[str, int]) -> dict:
    """A Node the KWOK controller runs (annotation kwok.x-k8s.io/node: fake), with its capacity."""
    capacity = {"cpu": NODE_CPU, "memory": NODE_MEMORY, "pods": NODE_PODS, **{k: str(v) for k, v in extended.items()}}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
                     "labels": {**labels, "kubernetes.io/hostname": name, "type": "kwok"}},
        "spec": {"taints": taints},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def _concrete(labels: dict[str, Optional[str]], node: str) -> dict[str, str]:
    """Label values for one node: a label any value satisfies (placement.ANY) gets one a cloud would set."""
    filler = {"kubernetes.io/arch": "amd64", "topology.kubernetes.io/zone": "zone-a",
              "topology.kubernetes.io/region": "region-a", "node.kubernetes.io/instance-type": "kwok"}
    return {k: (v if v is not None else filler.get(k, node)) for k, v in labels.items()}


def nodes_for(settings: Any, resources: list[dict], count: Optional[dict[str, int]] = None) -> list[dict]:
    """KWOK nodes for every node group of a stack: the labels Magnum or the group's selector and Node
    Feature Discovery give them (platformctl.placement, the same model the plan's placement check uses),
    the group's taints, and the GPU resources its device plugin would advertise. Each group is at its
    maxNodes (the cluster autoscaler's stand-in: for pods that wait it would add nodes up to there)."""
    from inference_platform.gpu.node_labels import node_taints
    from inference_platform.gpu.profiles import slots_per_node
    from platformctl.placement import group_node_labels

    labels = group_node_labels(resources, settings)
    nodes = []
    for group in settings.cluster.node_groups:
        extended = slots_per_node(group) if group.gpu is not None else {}
        for i in range((count or {}).get(group.name, max(group.max_nodes, 1))):
            name = f"{group.name}-{i}"
            nodes.append(kwok_node(name, _concrete(labels[group.name], name), node_taints(group), extended))
    return nodes


class CloudStandIn:
    """What a cloud, or an operator whose pods KWOK does not run, does for a cluster, done by a loop
    while the engine runs: a LoadBalancer Service gets an address (the cloud's load balancer), a
    Pending claim gets a volume bound to it (the storage class's provisioner), a RayService the status
    KubeRay writes once it serves (the operator's reconcile), an aggregated API's discovery at its
    Service (the pods behind it: tests/support/aggregated_api.py). Start with `start()`, end with `stop()`."""

    def __init__(self, cluster: KwokCluster, interval: float = 1.0):
        import threading

        self.cluster, self.interval = cluster, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self.errors: list[str] = []
        # (cluster IP, port) -> (the group/versions served there, the stand-in's process)
        self._api_servers: dict[tuple[str, int], tuple[list[str], subprocess.Popen]] = {}

    def start(self) -> "CloudStandIn":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        for _, server in self._api_servers.values():
            server.kill()
            server.wait()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.once()
            except Exception as e:  # the next round tries again; the test reads what kept failing
                self.errors.append(str(e)[-500:])

    def once(self) -> None:
        c = self.cluster
        services = c.get("services", "-A")
        for svc in services:
            if svc["spec"].get("type") == "LoadBalancer" and not svc.get("status", {}).get("loadBalancer", {}).get("ingress"):
                m = svc["metadata"]
                c.kubectl("patch", "service", m["name"], "-n", m["namespace"], "--subresource=status", "--type=merge",
                          "-p", json.dumps({"status": {"loadBalancer": {"ingress": [{"ip": "127.0.0.1"}]}}}), check=False)
        self._rayservices()
        self._aggregated_apis(services)
        volumes = []
        for claim in c.get("pvc", "-A"):
            if claim.get("status", {}).get("phase") != "Pending" or claim["spec"].get("volumeName"):
                continue
            m, spec = claim["metadata"], claim["spec"]
            volumes.append({
                "apiVersion": "v1", "kind": "PersistentVolume",
                "metadata": {"name": f"standin-{m['uid']}", "labels": {"real-test/stand-in": "volume"}},
                "spec": {"capacity": {"storage": spec.get("resources", {}).get("requests", {}).get("storage", "1Gi")},
                         "accessModes": spec.get("accessModes", ["ReadWriteOnce"]),
                         "storageClassName": spec.get("storageClassName") or "",
                         "persistentVolumeReclaimPolicy": "Delete",
                         "claimRef": {"namespace": m["namespace"], "name": m["name"], "uid": m["uid"]},
                         "hostPath": {"path": f"/stand-in/{m['uid']}"}},
            })
        if volumes:
            c.apply(volumes)

    def _rayservices(self) -> None:
        # KubeRay v1.7.0 writes observedGeneration with UpgradeInProgress False once traffic is on the
        # active cluster (rayservice_controller.go calculateConditions): what `up` waits for.
        c = self.cluster
        try:
            services = c.get("rayservices.ray.io", "-A")
        except RealToolError:
            return  # the CRD is not installed (yet)
        for svc in services:
            m, status = svc["metadata"], svc.get("status") or {}
            if status.get("observedGeneration") == m.get("generation"):
                continue
            now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            conditions = [{"type": t, "status": v, "reason": r, "message": "stand-in for the KubeRay operator",
                           "lastTransitionTime": now}
                          for t, v, r in (("Ready", "True", "NonZeroServeEndpoints"),
                                          ("UpgradeInProgress", "False", "NoPendingCluster"))]
            c.kubectl("patch", "rayservice.ray.io", m["name"], "-n", m["namespace"], "--subresource=status",
                      "--type=merge", "-p", json.dumps({"status": {"observedGeneration": m["generation"],
                                                                   "conditions": conditions}}), check=False)

    def _aggregated_apis(self, services: list[dict]) -> None:
        # The kube-aggregator reaches an APIService's backend at its Service's cluster IP and port
        # (--enable-aggregator-routing is off); the address is put on the namespace's `lo`.
        c = self.cluster
        wanted: dict[tuple[str, int], list[str]] = {}
        by_name = {(s["metadata"]["namespace"], s["metadata"]["name"]): s for s in services}
        for api in c.get("apiservices"):
            ref = api["spec"].get("service")
            svc = by_name.get((ref["namespace"], ref["name"])) if ref else None
            if svc is None or not api["spec"].get("insecureSkipTLSVerify") or svc["spec"].get("clusterIP") in (None, "None"):
                continue
            key = (svc["spec"]["clusterIP"], int(ref.get("port") or 443))
            wanted.setdefault(key, []).append(f"{api['spec']['group']}/{api['spec']['version']}")
        for key, group_versions in wanted.items():
            running = self._api_servers.get(key)
            if running is not None and sorted(running[0]) == sorted(group_versions) and running[1].poll() is None:
                continue
            if running is not None:
                running[1].kill()
                running[1].wait()
            subprocess.run(["ip", "-n", c.netns.name, "addr", "replace", f"{key[0]}/32", "dev", "lo"], check=True)
            root = Path(__file__).resolve().parents[2]
            self._api_servers[key] = (group_versions, subprocess.Popen(
                [*c.netns.prefix(), sys.executable, "-m", "tests.support.aggregated_api", key[0], str(key[1]),
                 *group_versions], cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
