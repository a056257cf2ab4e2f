"""A TritonService on a cluster that already runs Istio and Prometheus.

None of the platform's other components is used: the service refers to what the cluster
already has by name (its Gateway, the ingress gateway's namespace and identity, the monitoring
namespace, an S3 credentials Secret). The service, its versions and the GPU node group they
run on come from the stack's config (Pulumi.example.yaml).
"""

import pulumi
import pulumi_kubernetes as k8s

from inference_platform.serving.triton import TritonService

config = pulumi.Config()
service = config.require_object("service")
gpu_group = config.require_object("gpuGroup")
namespace_name = service.get("namespace", service["name"])

# The cluster the kubeconfig's current context points at, or the context named in the stack's
# config (`pulumi config set kubeContext <name>`).
provider = k8s.Provider("cluster", context=config.get("kubeContext"))

# The service's namespace, labelled so that the cluster's istiod injects a sidecar into every pod.
namespace = k8s.core.v1.Namespace(
    "namespace",
    metadata={"name": namespace_name, "labels": {"istio-injection": "enabled"}},
    opts=pulumi.ResourceOptions(provider=provider),
)

triton = TritonService(
    service["name"],
    {
        "service": service,
        "gpu_groups": [gpu_group],
        # The cluster's mesh, by name.
        "mesh": {
            # The Gateway (`<namespace>/<name>`) that already serves the service's hosts.
            "gateway": "istio-system/my-gateway",
            # Where the ingress gateway's pods run, their labels and the identity they call with:
            # the NetworkPolicy admits those pods of that namespace, the AuthorizationPolicy that
            # principal only. The labels are what the Istio gateway chart gives the pods of a
            # release named istio-ingressgateway (`istio: <release without istio->`, the default).
            "ingress_namespace": "istio-ingress",
            "ingress_pod_labels": {"istio": "ingressgateway"},
            "ingress_principal": "cluster.local/ns/istio-ingress/sa/istio-ingressgateway",
            # The namespace of the Prometheus that scrapes Triton (it must select PodMonitors in
            # every namespace: kube-prometheus-stack's podMonitorSelectorNilUsesHelmValues: false).
            "monitoring_namespace": "prometheus",
        },
        # The bucket the versions' model repositories live in, and the Secret with its
        # credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_DEFAULT_REGION) in the
        # service's namespace. The Secret is not made here: your secret tooling (an
        # ExternalSecret, a sealed secret) puts it into the new namespace; the pods start
        # once it is there.
        "weights": config.require_object("weights"),
    },
    # Its children use this provider, and wait for the namespace.
    opts=pulumi.ResourceOptions(providers={"kubernetes": provider}, depends_on=[namespace]),
)

pulumi.export("urls", triton.urls)
pulumi.export("credentials", triton.credentials)
