"""A team's service on a running platform, in the team's own project and stack.

The platform stack exports what a service needs from it (its `serving` output: the mesh
(Gateway, the ingress gateway's namespace and identity, the monitoring namespace, TLS) and per
inference namespace where the weights are). This program reads them through a StackReference
and hands them to a TritonService as they are: the component takes names as `pulumi.Input[str]`, so
outputs of another stack work without waiting for them. The service itself comes from the
team's config (Pulumi.example.yaml); the platform stack's file stays untouched.
"""

import pulumi
import pulumi_kubernetes as k8s

from inference_platform.serving.triton import TritonService

config = pulumi.Config()
service = config.require_object("service")
namespace = service.get("namespace", service["name"])

# `<organization>/inference-platform/<stack>` of the platform (needs read access to that stack).
platform = pulumi.StackReference("platform", config.require("platformStack"))
serving = platform.require_output("serving")
# The platform's namespaces only get a weights claim / Secret for namespaces it serves: the
# service goes into one of them.
weights = serving["weights"][namespace]

# The platform's cluster: its kubeconfig output (secret) where it has one; a platform on an
# existing cluster it reaches through the ambient kubeconfig exports none, and so this
# program uses the ambient kubeconfig too.
provider = k8s.Provider("platform", kubeconfig=platform.get_output("kubeconfig"))

triton = TritonService(
    service["name"],
    {
        "service": service,
        # The GPU group(s) the versions run on, as the platform's stack file defines them.
        "gpu_groups": config.require_object("gpuGroups"),
        # The platform's mesh: its Gateway, the ingress gateway's namespace and identity, the
        # monitoring namespace (the `serving` output holds them under MeshRef's keys). Whether
        # the Gateway serves HTTPS shapes the URLs reported: a plain value, as in the platform's
        # `serving.tls`.
        "mesh": {**{key: serving[key] for key in ("gateway", "ingressNamespace", "ingressPrincipal", "monitoringNamespace")},
                 "tls": config.get_bool("tls") or False},
        # Only the caches the namespace reads are set (a claim, an S3 Secret, or both).
        "weights": {key: weights.apply(lambda w, k=camel: w.get(k)) for key, camel in (
            ("claim_name", "claimName"), ("s3_secret_name", "s3SecretName"),
            ("s3_endpoint", "s3Endpoint"), ("s3_bucket", "s3Bucket"))},
    },
    opts=pulumi.ResourceOptions(providers={"kubernetes": provider}),
)

pulumi.export("urls", triton.urls)
pulumi.export("credentials", triton.credentials)
