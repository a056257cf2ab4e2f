"""The deliberate exceptions to checkov's Kubernetes checks, in one place.

Every workload the platform renders passes checkov's Kubernetes checks except where a
check asks for something the platform refuses on purpose. Each such exception is
recorded here (check, the objects it covers, why) and rendered on those objects as
checkov's skip annotations, `checkov.io/skip<N>: <check>=<reason>` in the object's
`metadata.annotations` (checkov reads them there, and for the pod of a Deployment or
DaemonSet from its parent: checkov/kubernetes/kubernetes_utils.py get_skipped_checks and
graph_builder/local_graph.py, checkov 3.3.30). A new workload, or a known one that loses
a hardening, still fails: the test over the rendered stacks wants zero failed checks.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

SKIP_ANNOTATION_PREFIX = "checkov.io/skip"


@dataclass(frozen=True)
class Exemption:
    check: str
    """checkov check id (CKV_K8S_43)."""
    reason: str
    """Why the platform does not do what the check asks. checkov splits the annotation on
    `=`, so a reason holds none."""


@dataclass(frozen=True)
class Workload:
    objects: str
    """Which objects carry the exemptions, as a reader finds them."""
    exemptions: tuple[Exemption, ...]


_TAG_PINNED = ("pinned by tag, not digest: the stack file chooses each version's Triton image and "
               "versions.py the platform's own; a tag says which release runs and is what an upgrade edits")
_PAUSE_NO_PROBE = "runs only pause, which serves nothing a probe could ask; Kubernetes restarts it if it exits"

TRITON = "triton"
TRITON_NO_CPU_LIMIT = "triton-without-cpu-limit"
TRITON_S3 = "triton-s3"
PLACEHOLDER = "placeholder"
PREPULL = "prepull"
NODE_MARKER = "node-marker"
CLUSTER_AUTOSCALER = "cluster-autoscaler"
TUNING = "tuning"

# Triton core filesystem/api.cc LoadCredentials: without TRITON_CLOUD_CREDENTIAL_PATH it takes S3
# credentials from the environment; the credential file is the other route, which Triton's docs
# (model_repository.md, "Cloud Storage with Credential file") mark Beta, so the stable one is used.
_S3_CREDENTIALS = ("Triton reads AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY from its environment (triton core "
                   "s3.h, filesystem/api.cc); the other route, a credential file named by "
                   "TRITON_CLOUD_CREDENTIAL_PATH, is marked Beta in Triton's docs, so the stable one is used")

WORKLOADS: dict[str, Workload] = {
    TRITON: Workload("Triton Deployments (`<service>-<version>`)", (
        Exemption("CKV_K8S_43", f"Triton image {_TAG_PINNED}"),
        Exemption("CKV_K8S_15", "IfNotPresent on purpose: the image is pre-pulled onto GPU nodes while the "
                                "driver installs; Always would ask the registry at every start and slow cold starts"),
        Exemption("CKV_K8S_40", "tritonserver images run as their triton-server user (uid 1000) that owns the "
                                "server files; no user above 10000 exists in the image"),
        Exemption("CKV_K8S_35", "Triton takes the admin key that closes its control APIs only on its command line, "
                                "which Kubernetes fills from an environment variable ($(TRITON_ADMIN_KEY)); on the S3 "
                                f"cache {_S3_CREDENTIALS}. Both come from Secrets, never literals"),
    )),
    TRITON_NO_CPU_LIMIT: Workload("Triton Deployments of versions without `resources.cpuLimit`", (
        Exemption("CKV_K8S_11", "no CPU limit on GPU pods on purpose: CFS throttling stalls feeding the GPU and "
                                "adds latency; the request reserves the CPU and resources.cpuLimit sets a limit"),
    )),
    TRITON_S3: Workload("Model Analyzer Jobs of versions reading their model repository from the S3 cache", (
        Exemption("CKV_K8S_35", f"on the S3 cache {_S3_CREDENTIALS}; they come from the weights Secret, never literals"),
    )),
    TUNING: Workload("Model Analyzer Jobs of versions with `tuning` (`tune-<service>-<version>-<run>`)", (
        Exemption("CKV_K8S_43", f"Triton, Triton SDK and rclone images {_TAG_PINNED}"),
        Exemption("CKV_K8S_40", "every step runs as uid 1000, the tritonserver images' triton-server user that "
                                "owns the server files; no user above 10000 exists in those images"),
        Exemption("CKV_K8S_15", "IfNotPresent on purpose: the version's Triton image is already on the GPU nodes "
                                "(pre-pulled) and the tag-pinned SDK image is many gigabytes; Always would ask the "
                                "registry at every start of the run's pod"),
    )),
    PLACEHOLDER: Workload("spare-capacity placeholder Deployments in `gpu-coldstart`", (
        Exemption("CKV_K8S_43", f"pause image {_TAG_PINNED}"),
        Exemption("CKV_K8S_15", "a tag-pinned image already on the node; Always adds a registry round trip to "
                                "every start of a slot"),
        Exemption("CKV_K8S_8", _PAUSE_NO_PROBE),
        Exemption("CKV_K8S_9", _PAUSE_NO_PROBE),
    )),
    PREPULL: Workload("image pre-pull DaemonSets in `gpu-coldstart`", (
        Exemption("CKV_K8S_43", f"the pulled Triton images and pause are {_TAG_PINNED}"),
        Exemption("CKV_K8S_15", "IfNotPresent is the point: each node pulls an image once and keeps it for the "
                                "Triton replicas; Always would pull again at every restart"),
        Exemption("CKV_K8S_8", _PAUSE_NO_PROBE),
        Exemption("CKV_K8S_9", _PAUSE_NO_PROBE),
    )),
    NODE_MARKER: Workload("node-group marker DaemonSets in `gpu-operator`", (
        Exemption("CKV_K8S_43", f"busybox and pause images {_TAG_PINNED}"),
        Exemption("CKV_K8S_15", "a tag-pinned image already on the node; Always would make labelling a new node "
                                "wait on the registry"),
        Exemption("CKV_K8S_8", _PAUSE_NO_PROBE),
        Exemption("CKV_K8S_9", _PAUSE_NO_PROBE),
    )),
    CLUSTER_AUTOSCALER: Workload("the node-group cluster autoscaler Deployment in `kube-system` (Heat clusters)", (
        Exemption("CKV_K8S_43", f"cluster-autoscaler image {_TAG_PINNED}"),
        Exemption("CKV_K8S_15", "a tag-pinned image; Always would make a restart on the control plane wait on "
                                "the registry"),
        Exemption("CKV_K8S_38", "the autoscaler watches pods and nodes and evicts pods through the Kubernetes "
                                "API: it needs its service-account token"),
        Exemption("CKV_K8S_11", "no CPU limit: throttling slows the scale-up simulation when many pods turn "
                                "pending at once; the request reserves its share and memory is limited"),
    )),
}


# --------------------------------------------------------------------------- the charts' workloads

@dataclass(frozen=True)
class ChartExemption:
    """Checks that objects a Helm release renders fail on purpose or because the chart offers no
    value to change it (what it does offer is set in chart_hardening.py). No annotation can reach
    them, so the hardening test matches each failure of a rendered object against these."""
    release: str
    """Helm release name (`*`: every release)."""
    objects: tuple[str, ...]
    """`<Kind>/<name>` of the objects as the chart names them; `*` matches any run of characters.
    checkov reports a pod template's NetworkPolicy check (CKV2_K8S_6) as `Pod/<workload name>`."""
    checks: tuple[str, ...]
    reason: str

    def covers(self, release: str, kind: str, name: str, check: str) -> bool:
        return (check in self.checks and fnmatch.fnmatchcase(release, self.release)
                and any(fnmatch.fnmatchcase(f"{kind}/{name}", o) for o in self.objects))


_TOKEN = "calls the Kubernetes API (watches, leases, status): it needs its service-account token"
_IMAGE_UID = ("runs as the non-root user its image declares (runAsNonRoot holds it to that); checkov asks for "
              "an explicit uid of 10000 or more, which the chart does not set and the image's files may not belong to")
_NO_POLICY_YET = ("no NetworkPolicy selects it yet: only the internet-facing UIs (Grafana, Kiali), the "
                  "observability backends (Prometheus, Alertmanager, Loki, Jaeger, kube-state-metrics, Alloy) and the platform's own pods "
                  "have theirs; this namespace's other flows are still to be written")
_HOOK = "a Helm hook Job that runs for seconds at upgrade or uninstall; the chart offers no value for it"
_WORKLOADS = ("Deployment/*", "DaemonSet/*", "StatefulSet/*", "Job/*")
_KPS = "kube-prometheus-stack"
_NFD = "gpu-operator-node-feature-discovery"
_GPU_HOOKS = ("Job/gpu-operator-upgrade-crd", "Job/gpu-operator-cleanup-gpucluster")

CHARTS: tuple[ChartExemption, ...] = (
    # -- every chart
    ChartExemption("*", _WORKLOADS, ("CKV_K8S_43",), (
        "the chart's images by the tags its pinned version names (versions.py pins the chart, the chart "
        "pins its images); a digest per image would fork every chart's image list at each upgrade. Tags "
        "can in principle be pushed again (registry.k8s.io promises immutable ones, quay.io, docker.io and "
        "nvcr.io do not): trust rests on the pinned chart version and its release tags")),
    ChartExemption("*", _WORKLOADS, ("CKV_K8S_15",), (
        "IfNotPresent with tag-pinned images, as for the platform's own pods: Always would make every "
        "restart of a system pod wait on the registry")),
    # -- gpu-operator (and its node-feature-discovery)
    ChartExemption("gpu-operator", ("Deployment/gpu-operator", f"Deployment/{_NFD}-*", f"DaemonSet/{_NFD}-*",
                                    f"Job/{_NFD}-prune", *_GPU_HOOKS), ("CKV_K8S_38",),
                   f"the GPU operator and node-feature-discovery manage nodes, labels and operands: each {_TOKEN}"),
    ChartExemption("gpu-operator", (f"Deployment/{_NFD}-*", f"DaemonSet/{_NFD}-*", f"Job/{_NFD}-prune"),
                   ("CKV_K8S_40",), _IMAGE_UID),
    ChartExemption("gpu-operator", ("Deployment/gpu-operator",), (
        "CKV_K8S_20", "CKV_K8S_22", "CKV_K8S_23", "CKV_K8S_28", "CKV_K8S_29", "CKV_K8S_30", "CKV_K8S_31",
        "CKV_K8S_37", "CKV_K8S_40"), "gpu-operator v26.7.0 templates/operator.yaml has no securityContext value for the "
                       "operator; it deploys the privileged driver, toolkit and device-plugin pods itself"),
    ChartExemption("gpu-operator", _GPU_HOOKS, (
        "CKV_K8S_10", "CKV_K8S_11", "CKV_K8S_12", "CKV_K8S_13", "CKV_K8S_20", "CKV_K8S_22", "CKV_K8S_23",
        "CKV_K8S_28", "CKV_K8S_29", "CKV_K8S_30", "CKV_K8S_31", "CKV_K8S_37", "CKV_K8S_40"), _HOOK),
    ChartExemption("gpu-operator", (f"Job/{_NFD}-prune",), ("CKV_K8S_29", "CKV_K8S_31"),
                   f"node-feature-discovery's prune Job at uninstall: {_HOOK}"),
    ChartExemption("gpu-operator", ("Pod/gpu-operator", f"Pod/{_NFD}-*", "Pod/gpu-operator-upgrade-crd",
                                    "Pod/gpu-operator-cleanup-gpucluster"), ("CKV2_K8S_6",), _NO_POLICY_YET),
    # -- llm-d-router-gateway: one release per LLM version, named `<service>-<version>`, its picker `<release>-epp`
    ChartExemption("*", ("Deployment/*-epp",), (
        "CKV_K8S_20", "CKV_K8S_22", "CKV_K8S_23", "CKV_K8S_28", "CKV_K8S_29", "CKV_K8S_30", "CKV_K8S_31",
        "CKV_K8S_37", "CKV_K8S_40"), "llm-d-router-gateway v0.10.0 charts/router/templates/_deployment.yaml has no "
                                     "securityContext value for the endpoint picker's pod or container"),
    ChartExemption("*", ("Deployment/*-epp",), ("CKV_K8S_38",), f"the endpoint picker (its InferencePool, the pool's pods) {_TOKEN}"),
    ChartExemption("*", ("Deployment/*-epp",), ("CKV_K8S_11",),
                   "no CPU limit on the endpoint picker, as upstream: every streamed request and response passes "
                   "through it (Istio ext_proc FULL_DUPLEX_STREAMED), and CFS throttling would add to each token's "
                   "latency; its request reserves the CPU"),
    # -- istio-ingressgateway
    ChartExemption("istio-ingressgateway", ("Deployment/istio-ingressgateway",), ("CKV_K8S_14",),
                   "image `auto`: istiod's injector fills in the proxy image it pins (versions.py), as gateway "
                   "1.30.3 templates/deployment.yaml intends"),
    ChartExemption("istio-ingressgateway", ("Deployment/istio-ingressgateway",), ("CKV_K8S_8", "CKV_K8S_9"),
                   "the injector adds the proxy's readiness probe (/healthz/ready on 15021, istiod 1.30.3 "
                   "files/gateway-injection-template.yaml) at admission, and no liveness probe"),
    ChartExemption("istio-ingressgateway", ("Deployment/istio-ingressgateway",), ("CKV_K8S_40",),
                   "the injector runs the proxy as uid 1337, Istio's proxy user (istiod 1.30.3 "
                   "files/gateway-injection-template.yaml)"),
    ChartExemption("istio-ingressgateway", ("Deployment/istio-ingressgateway",), ("CKV_K8S_38",),
                   "Envoy proves its identity to istiod with its service-account token"),
    ChartExemption("istio-ingressgateway", ("RoleBinding/istio-ingressgateway",), ("CKV2_K8S_5",),
                   "the gateway reads the TLS Secrets of its own namespace (gateway 1.30.3 templates/role.yaml)"),
    ChartExemption("istio-ingressgateway", ("Pod/istio-ingressgateway",), ("CKV2_K8S_6",),
                   "takes traffic from the internet through the load balancer: a policy could only admit every source"),
    # -- jaeger
    ChartExemption("jaeger", ("Deployment/jaeger",), ("CKV_K8S_38",),
                   "no token is mounted: the chart turns it off on the ServiceAccount "
                   "(jaeger.serviceAccount.automountServiceAccountToken), which checkov does not read"),
    ChartExemption("jaeger", ("Deployment/jaeger",), ("CKV_K8S_11", "CKV_K8S_13"),
                   "the in-memory trace store grows with traffic up to its trace count: a memory limit would kill "
                   "the pod and lose every trace; requests reserve what it needs at rest"),
    # -- kiali
    ChartExemption("kiali", ("Deployment/kiali",), ("CKV_K8S_29",),
                   "kiali-server 2.29.0 templates/deployment.yaml has no pod securityContext value; its container "
                   "runs non-root, read-only, without capabilities and with RuntimeDefault seccomp"),
    ChartExemption("kiali", ("Deployment/kiali",), ("CKV_K8S_38",),
                   f"Kiali reads the mesh's configuration and workloads: it {_TOKEN}"),
    ChartExemption("kiali", ("Deployment/kiali",), ("CKV_K8S_40",), _IMAGE_UID),
    # -- kube-prometheus-stack
    ChartExemption(_KPS, (f"Deployment/{_KPS}-grafana", f"Deployment/{_KPS}-kube-state-metrics",
                          f"Deployment/{_KPS}-operator", f"Job/{_KPS}-admission-*"), ("CKV_K8S_38",),
                   f"the dashboard sidecars, kube-state-metrics, the operator and the webhook certificate Jobs: each {_TOKEN}"),
    ChartExemption(_KPS, (f"Deployment/{_KPS}-grafana",), ("CKV_K8S_40",),
                   "Grafana runs as uid 472, the grafana user its image's files belong to (grafana 12.11.1 "
                   "values.yaml securityContext)"),
    ChartExemption(_KPS, (f"Deployment/{_KPS}-grafana",), ("CKV_K8S_8", "CKV_K8S_9"),
                   "the k8s-sidecar containers serve no health endpoint to probe; Grafana itself has both probes"),
    ChartExemption(_KPS, (f"Deployment/{_KPS}-grafana",), ("CKV_K8S_22",),
                   "Grafana and its sidecars need writable paths the chart does not put on volumes "
                   "(grafana-community/helm-charts#729); not enabled without a Grafana to try it on"),
    ChartExemption(_KPS, (f"Deployment/{_KPS}-grafana",), ("CKV_K8S_35",),
                   "grafana 12.11.1 passes admin.existingSecret to Grafana and its sidecars only as environment "
                   "variables; the values come from our Secret, never literals"),
    ChartExemption(_KPS, (f"ClusterRoleBinding/{_KPS}-grafana-clusterrolebinding",), ("CKV2_K8S_5",),
                   "grafana 12.11.1 templates/clusterrole.yaml always grants configmaps and secrets to the "
                   "dashboard sidecars, which search every namespace for dashboards"),
    ChartExemption(_KPS, (f"DaemonSet/{_KPS}-prometheus-node-exporter",), (
        "CKV_K8S_17", "CKV_K8S_19", "CKV_K8S_20", "CKV_K8S_28", "CKV_K8S_31", "CKV_K8S_37"),
                   "node-exporter reads the host's processes and network: it shares the host's namespaces as the "
                   "chart runs it"),
    ChartExemption(_KPS, (f"ClusterRole/{_KPS}-operator",), ("CKV_K8S_49",),
                   "the operator owns the monitoring.coreos.com resources and the StatefulSets it makes of them"),
    ChartExemption(_KPS, (f"ClusterRole/{_KPS}-admission",), ("CKV_K8S_155",),
                   "the certificate Job patches the operator's own webhook configurations with their CA"),
    ChartExemption(_KPS, (f"RoleBinding/{_KPS}-admission",), ("CKV2_K8S_5",),
                   "the certificate Job writes the webhook's certificate Secret in its own namespace"),
    ChartExemption(_KPS, (f"Pod/{_KPS}-operator", f"Pod/{_KPS}-admission-*"),
                   ("CKV2_K8S_6",), _NO_POLICY_YET),
    ChartExemption(_KPS, (f"Pod/{_KPS}-prometheus-node-exporter",), ("CKV2_K8S_6",),
                   "runs on the host network, which NetworkPolicy does not govern"),
    # -- prometheus-adapter
    ChartExemption("prometheus-adapter", ("Deployment/prometheus-adapter",), ("CKV_K8S_38",),
                   f"serves the custom metrics API and delegates its authentication: it {_TOKEN}"),
    ChartExemption("prometheus-adapter", ("ClusterRole/prometheus-adapter-server-resources",), ("CKV_K8S_49",),
                   "the custom.metrics.k8s.io API group, which the adapter itself serves"),
    ChartExemption("prometheus-adapter", ("ClusterRoleBinding/prometheus-adapter-hpa-controller",), (
        "CKV2_K8S_1", "CKV2_K8S_2", "CKV2_K8S_3", "CKV2_K8S_4", "CKV2_K8S_5"),
                   "binds only custom.metrics.k8s.io, the adapter's own API; checkov's RBAC graph checks "
                   "(kubernetes/checks/graph_checks/*.json, 3.3.30) read its wildcard as every resource of every group"),
    ChartExemption("prometheus-adapter", ("Pod/prometheus-adapter",), ("CKV2_K8S_6",), _NO_POLICY_YET),
    # -- loki and alloy
    ChartExemption("loki", ("StatefulSet/loki",), ("CKV_K8S_38",),
                   f"Loki's rules sidecar watches ConfigMaps: it {_TOKEN}"),
    ChartExemption("loki", ("ClusterRoleBinding/loki-clusterrolebinding",), ("CKV2_K8S_5",),
                   "loki 18.11.0 templates grant the rules sidecar configmaps and secrets cluster-wide"),
    ChartExemption("alloy", ("DaemonSet/alloy",), ("CKV_K8S_22", "CKV_K8S_23", "CKV_K8S_40"),
                   "Alloy tails the kubelet's root-owned files under /var/log/pods, so it runs as root (without "
                   "capabilities), and keeps its positions in its storage path on the image"),
    ChartExemption("alloy", ("DaemonSet/alloy",), ("CKV_K8S_8", "CKV_K8S_9"),
                   "alloy 1.11.1 has no probe values for its config-reloader sidecar (values.yaml configReloader); "
                   "Alloy itself has its readiness probe"),
    ChartExemption("alloy", ("DaemonSet/alloy",), ("CKV_K8S_38",),
                   f"Alloy discovers the node's pods: it {_TOKEN}"),
    # -- argo-workflows, kuberay-operator, csi-s3
    ChartExemption("argo-workflows", ("Deployment/argo-workflows-workflow-controller",), ("CKV_K8S_38",),
                   f"the workflow controller runs the pipelines' pods: it {_TOKEN}"),
    ChartExemption("argo-workflows", ("Deployment/argo-workflows-workflow-controller",), ("CKV_K8S_40",), _IMAGE_UID),
    ChartExemption("argo-workflows", ("Deployment/argo-workflows-workflow-controller",), ("CKV_K8S_9",),
                   "argo-workflows 1.0.18 has a liveness probe value only for the controller"),
    ChartExemption("kuberay-operator", ("Deployment/kuberay-operator",), ("CKV_K8S_38",),
                   f"the operator runs the RayServices' clusters: it {_TOKEN}"),
    ChartExemption("kuberay-operator", ("Deployment/kuberay-operator",), ("CKV_K8S_40",), _IMAGE_UID),
    # -- kubeflow-trainer (Trainer's manager, and JobSet's controller as its dependency)
    ChartExemption("kubeflow-trainer", ("Deployment/kubeflow-trainer-controller-manager", "Deployment/jobset-controller"),
                   ("CKV_K8S_38",), f"the controllers create the TrainJobs' JobSets, Jobs and pods: they {_TOKEN}"),
    ChartExemption("kubeflow-trainer", ("Deployment/kubeflow-trainer-controller-manager", "Deployment/jobset-controller"),
                   ("CKV_K8S_40",), _IMAGE_UID),
    ChartExemption("kubeflow-trainer", ("ClusterRole/kubeflow-trainer-controller-manager", "ClusterRole/jobset-controller"),
                   ("CKV_K8S_155",), "each controller writes the CA bundle of its own webhook configurations (its "
                   "internal certificate management: kubeflow-trainer 2.3.0 templates/rbac/clusterrole.yaml, jobset "
                   "0.12.0 charts/jobset/templates/rbac/role.yaml)"),
    ChartExemption("kubeflow-trainer", ("RoleBinding/jobset-manager-secrets-rolebinding",), ("CKV2_K8S_5",),
                   "JobSet keeps its webhook certificate in a Secret of its own namespace (jobset 0.12.0 "
                   "charts/jobset/templates/internalcert)"),
    ChartExemption("kubeflow-trainer", ("Deployment/kubeflow-trainer-controller-manager",), ("CKV_K8S_29",),
                   "kubeflow-trainer 2.3.0 templates/manager/deployment.yaml has no pod securityContext value "
                   "(the container's, manager.securityContext, sets runAsNonRoot, no escalation, all capabilities dropped)"),
    ChartExemption("kubeflow-trainer", ("Deployment/kubeflow-trainer-controller-manager",), ("CKV_K8S_22",),
                   "kubeflow-trainer 2.3.0 values.yaml manager.securityContext leaves the root file system writable, "
                   "and where the manager writes besides its mounted certificate is not verified here, so the "
                   "platform does not risk a crash-looping manager on it"),
    ChartExemption("kubeflow-trainer", ("Pod/kubeflow-trainer-controller-manager", "Pod/jobset-controller"), ("CKV2_K8S_6",),
                   _NO_POLICY_YET),
    # -- kueue (training queues)
    ChartExemption("kueue", ("Deployment/kueue-controller-manager",), ("CKV_K8S_38",),
                   f"Kueue admits and suspends jobs and keeps its queues' status: it {_TOKEN}"),
    ChartExemption("kueue", ("ClusterRole/kueue-manager-role",), ("CKV_K8S_155",),
                   "Kueue writes the CA bundle of its own two webhook configurations (kueue 0.19.2 "
                   "templates/rbac/role.yaml: get and update by resourceName only, list and watch of all)"),
    ChartExemption("kueue", ("RoleBinding/kueue-manager-secrets-rolebinding",), ("CKV2_K8S_5",),
                   "Kueue keeps its webhook certificate in a Secret of its own namespace (internalCertManagement; "
                   "kueue 0.19.2 templates/rbac/manager_secrets_role.yaml)"),
    ChartExemption("kueue", ("Pod/kueue-controller-manager",), ("CKV2_K8S_6",), _NO_POLICY_YET),
    ChartExemption("csi-s3", ("DaemonSet/csi-s3", "StatefulSet/csi-s3-provisioner"), (
        "CKV_K8S_8", "CKV_K8S_9", "CKV_K8S_10", "CKV_K8S_11", "CKV_K8S_12", "CKV_K8S_13", "CKV_K8S_20",
        "CKV_K8S_22", "CKV_K8S_23", "CKV_K8S_28", "CKV_K8S_29", "CKV_K8S_30", "CKV_K8S_31", "CKV_K8S_37",
        "CKV_K8S_38", "CKV_K8S_40"), "csi-s3 0.43.7 values.yaml offers images, storage class, secret, "
                                     "tolerations, node selector and kubelet path only"),
    ChartExemption("csi-s3", ("DaemonSet/csi-s3",), ("CKV_K8S_16", "CKV_K8S_25", "CKV_K8S_39"),
                   "a CSI node plugin mounts FUSE file systems into the kubelet's pod directories: it needs "
                   "privilege and CAP_SYS_ADMIN"),
    ChartExemption("csi-s3", ("Pod/csi-s3", "Pod/csi-s3-provisioner"), ("CKV2_K8S_6",), _NO_POLICY_YET),
)


def chart_exemption(release: str, kind: str, name: str, check: str) -> ChartExemption | None:
    """The recorded exemption of a rendered chart object's failed check, if any."""
    return next((e for e in CHARTS if e.covers(release, kind, name, check)), None)


def exemptions(*workloads: str) -> list[Exemption]:
    """The exemptions of the given workloads, in order."""
    return [e for w in workloads for e in WORKLOADS[w].exemptions]


def skip_annotations(*workloads: str) -> dict[str, str]:
    """checkov's skip annotations for an object that is all of the given workloads."""
    return {f"{SKIP_ANNOTATION_PREFIX}{i}": f"{e.check}={e.reason}"
            for i, e in enumerate(exemptions(*workloads), start=1)}


def triton_workloads(cpu_limit: bool) -> tuple[str, ...]:
    """What a Triton Deployment is exempt as: always Triton (its secrets from the environment,
    the S3 credentials among them), plus per its CPU limit."""
    return (TRITON,) + (() if cpu_limit else (TRITON_NO_CPU_LIMIT,))


def tuning_workloads(version) -> tuple[str, ...]:
    """What a version's tuning Job is exempt as: its Triton server is the version's, with the
    version's CPU limit and S3 credentials (and no admin key: triton_server.analysis_server)."""
    return ((TUNING,) + triton_workloads(bool(version.resources.cpu_limit))[1:]
            + ((TRITON_S3,) if version.model_repository.cache == "s3" else ()))


def reference() -> str:
    """The table of recorded exceptions in docs/policies.md."""
    rows = ["| check | objects | reason |", "|---|---|---|"]
    for workload in WORKLOADS.values():
        for e in workload.exemptions:
            rows.append(f"| `{e.check}` | {workload.objects} | {e.reason.replace('|', '/')} |")
    for c in CHARTS:
        objects = ", ".join(f"`{o}`" for o in c.objects)
        where = "every chart release" if c.release == "*" else f"release `{c.release}`"
        checks = ", ".join(f"`{check}`" for check in c.checks)
        rows.append(f"| {checks} | {where}: {objects} | {c.reason.replace('|', '/')} |")
    return "\n".join(rows) + "\n"
