"""Kubeflow Trainer's chart: the controller, its webhooks and CRDs, and JobSet under it.

kubeflow-trainer 2.3.0 (kubeflow/trainer charts/kubeflow-trainer at v2.3.0) renders its CRDs as
templates (`crds.enabled`, default true: Helm's crds/ folder no longer applies), so they come and
go with the release, as the platform's other charts' CRDs do, and every TrainJob and runtime
depends on the release. JobSet 0.12.0 is the chart's dependency (`jobset.install`). The chart's
own ClusterTrainingRuntimes stay off (`runtimes.*.enabled` false by default): they would come
from a post-install hook Job that installs kubectl from the network into an alpine image
(templates/runtimes/installer-job.yaml), and the platform declares its own (runtimes.py).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s

from inference_platform.core import versions
from inference_platform.core.common import helm_release, namespace, resource_opts, with_node_selector
from inference_platform.core.endpoints import MONITORING_NAMESPACE

RELEASE = "kubeflow-trainer"
# The namespace of the upstream install manifests (kubeflow/trainer manifests/overlays/manager:
# kubeflow-system); Pod Security `restricted`: the manager and JobSet's controller run non-root
# without escalation or capabilities (values manager.securityContext, jobset controller.securityContext).
NAMESPACE = "kubeflow-system"


def trainer_values(system_node_selector: Optional[dict[str, str]] = None) -> dict[str, Any]:
    """The kubeflow-trainer chart: Trainer's manager and JobSet, on the system nodes, no built-in runtimes.
    JobSet's controller is scraped (its chart's ServiceMonitor, charts/jobset templates/prometheus):
    `jobset_failed_total` is what the TrainJobFailed alert reads."""
    return with_node_selector({
        "crds": {"enabled": True},
        "jobset": {"install": True, "prometheus": {"enable": True, "prometheusNamespace": MONITORING_NAMESPACE}},
        "runtimes": {"defaultEnabled": False},
    }, system_node_selector or {}, "manager.nodeSelector", "jobset.controller.nodeSelector")


def install_trainer(parent: pulumi.Resource, name: str, system_node_selector: Optional[dict[str, str]] = None, *,
                    provider: Optional[pulumi.ProviderResource] = None,
                    depends_on: Sequence[pulumi.Resource] = ()) -> k8s.helm.v3.Release:
    """Trainer's namespace and release, children of `parent`: the Training component's own, or the
    platform's, which installs it before Kueue (Kueue sets up its TrainJob integration only if
    Trainer's CRDs exist when it starts, kueue v0.19.2 pkg/controller/jobframework/setup.go)."""
    system = namespace(f"{name}-namespace", NAMESPACE, resource_opts(parent, provider=provider, depends_on=depends_on),
                       app=RELEASE, pod_security="restricted")
    return helm_release(f"{name}-release", RELEASE, versions.KUBEFLOW_TRAINER, NAMESPACE,
                        trainer_values(system_node_selector),
                        resource_opts(parent, provider=provider, depends_on=[system, *depends_on]))
