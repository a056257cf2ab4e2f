"""The NVIDIA GPU operator: drivers, container toolkit, device plugin, MIG manager and
DCGM exporter, with the MIG layouts and GPU sharing configs the node groups select.

Each GPU group's nodes carry `nvidia.com/mig.config` (MIG) or
`nvidia.com/device-plugin.config` (time-slicing / MPS), see node_labels.node_labels; the
operator's MIG manager and device plugin read those labels and apply the named config.
The chart's Node Feature Discovery puts them on the nodes, with the rest of the node
contract (node_rules.py).
"""


from typing import Any, Optional

import pulumi
import pulumi_kubernetes as k8s
import yaml

from inference_platform.args import GpuOperatorArgs
from inference_platform.core import endpoints as ep
from inference_platform.core import versions
from inference_platform.core.common import helm_release, init_component, namespace, resource_opts, standard_labels, with_node_selector
from inference_platform.core.node_contract import GPU_TAINT
from inference_platform.gpu.inputs import GpuOperatorInputs
from inference_platform.gpu.node_labels import (
    CLUSTER_GPU_OPERATOR_RELEASE,
    device_plugin_config_name,
    group_taints,
    mig_config_name,
    tolerations,
)
from inference_platform.gpu.node_rules import CONTROL_PLANE_TAINT, NodeContract, NodeContractArgs
from inference_platform.gpu.profiles import mig_mix
from inference_platform.settings.cluster import NodeGroup
from inference_platform.settings.component_args import validated
from inference_platform.timing.readiness import chart_timeout, custom_timeouts, node_join_budget

NAMESPACE = ep.GPU_OPERATOR_NAMESPACE
MIG_CONFIG_MAP = "mig-parted-config"
DEVICE_PLUGIN_CONFIG_MAP = "device-plugin-config"
# The MIG manager applies this to GPU nodes without a nvidia.com/mig.config label.
MIG_DEFAULT_CONFIG = "all-disabled"


def _mig_groups(a: GpuOperatorInputs) -> list[NodeGroup]:
    return [g for g in a.gpu_groups if g.gpu.sharing.mode == "mig"]


def _shared_groups(a: GpuOperatorInputs) -> list[NodeGroup]:
    return [g for g in a.gpu_groups if g.gpu.sharing.mode in ("time-slicing", "mps")]


def mig_parted_config(a: GpuOperatorInputs) -> Optional[dict[str, Any]]:
    """mig-parted config for the MIG manager, or None when the named profiles it
    discovers on each node suffice (no custom mix). A custom config replaces the
    discovered one, so it also carries the named profiles other groups use."""
    groups = _mig_groups(a)
    if not any(isinstance(g.gpu.sharing.mig_profile, dict) for g in groups):
        return None
    configs: dict[str, Any] = {MIG_DEFAULT_CONFIG: [{"devices": "all", "mig-enabled": False}]}
    for g in groups:
        configs[mig_config_name(g)] = [{"devices": "all", "mig-enabled": True, "mig-devices": mig_mix(g)}]
    return {"version": "v1", "mig-configs": configs}


def device_plugin_configs(a: GpuOperatorInputs) -> dict[str, dict[str, Any]]:
    """Device-plugin configs, one per sharing profile the time-slicing / MPS groups use."""
    out: dict[str, dict[str, Any]] = {}
    for g in _shared_groups(a):
        s = g.gpu.sharing
        key = "timeSlicing" if s.mode == "time-slicing" else "mps"
        out[device_plugin_config_name(g)] = {
            "version": "v1",
            "sharing": {key: {
                "renameByDefault": s.rename_by_default,
                "resources": [{"name": "nvidia.com/gpu", "replicas": s.replicas}],
            }},
        }
    return out


def _driver_values(a: GpuOperatorInputs) -> dict[str, Any]:
    driver = a.gpu_operator.driver
    if driver.mode == "preinstalled":
        return {"enabled": False}
    if driver.mode == "precompiled":
        # Precompiled driver images are tagged by branch: <branch>-<kernel>-<os>.
        return {"enabled": True, "usePrecompiled": True, "version": driver.branch}
    return {"enabled": True, "usePrecompiled": False, "version": versions.GPU_DRIVER_VERSION}


def gpu_operator_values(a: GpuOperatorInputs) -> dict[str, Any]:
    """Helm values of the gpu-operator release (keys of the pinned chart's values.yaml).

    On Heat, CDI off. Heat nodes run the containerd the platform pins (settings/cluster.py
    HEAT_CONTAINERD, 1.6), whose CRI plugin injects no CDI devices (containerd 1.7 added them, behind
    `enable_cdi`). gpu-operator v26.7.0 turns CDI on by default (values.yaml `cdi.enabled`), and with
    it stops making `nvidia` the default runtime (controllers/object_controls.go
    transformToolkitCtrForCDI: NVIDIA_RUNTIME_SET_AS_DEFAULT=false) and hands GPUs to containers as
    CDI devices only (transformDevicePluginCtrForCDI: cdi-annotations,cdi-cri): the operator's own
    pods (runtime class `nvidia`) pass, and every workload starts without a GPU. With CDI off the
    toolkit makes `nvidia` the default runtime, which any containerd runs.
    """
    dcgm = a.gpu_operator.dcgm_exporter
    mig_groups = _mig_groups(a)
    strategies = {g.gpu.sharing.effective_mig_strategy for g in mig_groups}
    values: dict[str, Any] = {
        "driver": _driver_values(a),
        "toolkit": {"enabled": True},
        "dcgmExporter": {"enabled": dcgm, "serviceMonitor": {"enabled": dcgm}},
        "mig": {"strategy": strategies.pop() if strategies else "single"},
        "migManager": {"enabled": bool(mig_groups)},
        # The operator's daemonsets run on every GPU node, whatever the group's own taints.
        "daemonsets": {"tolerations": tolerations([GPU_TAINT, *group_taints(a.gpu_groups)])},
        "node-feature-discovery": {
            # NodeFeatureRule taints (node_rules.py) reach nodes only with this on.
            "master": {"enableTaints": True},
            # nfd-worker keeps running where the rules' taints arrive, NoExecute ones included.
            "worker": {"tolerations": tolerations([CONTROL_PLANE_TAINT, *group_taints(a.node_groups)])},
        },
    }
    if a.magnum_labeller == "heat":
        values["cdi"] = {"enabled": False}
    if mig_parted_config(a) is not None:
        values["migManager"]["config"] = {"name": MIG_CONFIG_MAP, "create": False, "default": MIG_DEFAULT_CONFIG}
    if device_plugin_configs(a):
        # Nodes without the label fall back to the plugin's built-in config (whole GPUs).
        values["devicePlugin"] = {"config": {"name": DEVICE_PLUGIN_CONFIG_MAP, "create": False}}
    # gpu-operator v26.7.0 values.yaml operator.nodeSelector (Helm merges it with kubernetes.io/os: linux),
    # and its node-feature-discovery subchart's master.nodeSelector and gc.nodeSelector.
    return with_node_selector(values, a.system_node_selector, "operator.nodeSelector",
                              "node-feature-discovery.master.nodeSelector", "node-feature-discovery.gc.nodeSelector")


def _yaml(doc: dict[str, Any]) -> str:
    return yaml.safe_dump(doc, sort_keys=False)


class GpuOperator(pulumi.ComponentResource):
    """The GPU operator's Helm release, the configs it reads and the node contract its Node
    Feature Discovery applies; `release` is the handle to depend on (its CRDs and device plugin).

    Give it `dependsOn` the release that installs the ServiceMonitor CRD: the operator creates
    DCGM's ServiceMonitor only if that CRD exists when it reconciles.
    """

    def __init__(self, name: str, args: GpuOperatorArgs, opts: Optional[pulumi.ResourceOptions] = None):
        a = validated(GpuOperatorInputs, args, "GpuOperator")
        init_component(self, "GpuOperator", name, opts)
        self.release: Optional[pulumi.Resource] = None
        self.namespace: Optional[k8s.core.v1.Namespace] = None
        if a.magnum_labeller == "magnum-capi-helm":
            # The cluster runs the operator and NFD already (node_labels.CLUSTER_GPU_OPERATOR_RELEASE,
            # in the same namespace); a second release would clash on their cluster-wide objects.
            # Only the node contract is ours; Magnum reports the cluster created once its addons
            # are deployed (magnum-capi-helm 1.4.0 driver.py _update_status_updating), so NFD's CRDs exist.
            release_name: pulumi.Input[str] = CLUSTER_GPU_OPERATOR_RELEASE
        else:
            release_name = self._own_operator(name, a)
        budget = node_join_budget(a.cold_start)
        self.node_contract = NodeContract(f"{name}-contract", NodeContractArgs(
            groups=tuple(a.node_groups),
            namespace=NAMESPACE,
            crds=self.release,
            magnum_driver=a.magnum_labeller,
            after=(self.namespace,) if self.namespace is not None else (),
            marker_timeouts=custom_timeouts(budget) if budget is not None else None,
        ), opts=pulumi.ResourceOptions(parent=self))
        self.register_outputs({"release": release_name, "namespace": NAMESPACE})

    def _own_operator(self, name: str, a: GpuOperatorInputs) -> pulumi.Output[str]:
        """The operator's namespace, the configs it reads and its Helm release (its name)."""
        k8s_opts = resource_opts(self)
        # The operator's daemonsets load kernel modules and touch devices: privileged.
        self.namespace = namespace(
            f"{name}-namespace", NAMESPACE, k8s_opts, app="gpu-operator", pod_security="privileged"
        )
        in_namespace = resource_opts(self, depends_on=[self.namespace])
        configs: list[pulumi.Resource] = []
        mig = mig_parted_config(a)
        if mig is not None:
            configs.append(self._config_map(f"{name}-mig-parted", MIG_CONFIG_MAP, {"config.yaml": _yaml(mig)}, in_namespace))
        plugin = device_plugin_configs(a)
        if plugin:
            configs.append(self._config_map(
                f"{name}-device-plugin", DEVICE_PLUGIN_CONFIG_MAP, {k: _yaml(v) for k, v in plugin.items()}, in_namespace))
        chart = versions.GPU_OPERATOR
        values = gpu_operator_values(a)
        release = helm_release(
            f"{name}-release", "gpu-operator", chart, NAMESPACE, values,
            resource_opts(self, depends_on=[self.namespace, *configs]),
            timeout_seconds=chart_timeout(chart.name, values, a.cold_start),
        )
        self.release = release
        return release.name

    def _config_map(self, logical: str, name: str, data: dict[str, str], opts: pulumi.ResourceOptions) -> k8s.core.v1.ConfigMap:
        return k8s.core.v1.ConfigMap(
            logical,
            metadata={"name": name, "namespace": NAMESPACE, "labels": standard_labels(name)},
            data=data,
            opts=opts,
        )
