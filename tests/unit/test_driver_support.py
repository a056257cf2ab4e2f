"""Node OS x GPU driver mode x Magnum driver: each rule refuses what it should, naming the key,
and accepts what it should; the example stacks pass; the GPU operator's values still render."""

from __future__ import annotations

import pytest

from inference_platform.core import driver_support as support
from inference_platform.core import versions
from inference_platform.core.node_contract import MAGNUM_GROUP_LABELS
from inference_platform.settings.cluster import MagnumTemplate
from inference_platform.settings.errors import ConfigError
from inference_platform.settings.gpu import DriverSettings
from inference_platform.settings.loader import parse_settings
from inference_platform.settings.stack import Settings
from platformctl.engine import stack_settings
from tests.conftest import HEAT, HEAT_MIRRORED_AUTOSCALER, STACKS, as_magnum, base_config, gpu_operator_values_of
from tests.support import conformance

STACK_FILE = "stacks/Pulumi.test-dev.yaml"
GPU_OS = "inference-platform:cluster.nodeGroups[gpu].os"
TEMPLATE_OS = "inference-platform:cluster.magnum.template.os"
BRANCH = "inference-platform:gpuOperator.driver.branch"
ON_HEAT = {k: v for k, v in HEAT.items() if k != "template"}


def parse(raw: dict) -> Settings:
    return parse_settings(raw, STACK_FILE)


def refused(raw: dict) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse(raw)
    line = info.value.one_line()
    assert line.startswith(STACK_FILE + ": ") and "\n" not in line
    return info.value


def existing(os_id: str | None, mode: str = "precompiled", branch: str = "595", **operator) -> dict:
    """The base config (an existing cluster) with its GPU group on os_id and the given driver."""
    raw = base_config() | {"gpuOperator": {"driver": {"mode": mode, "branch": branch}, **operator}}
    group = raw["cluster"]["nodeGroups"][1]
    group.pop("os")
    if os_id is not None:
        group["os"] = os_id
    return raw


def magnum(template: dict | None = None, mode: str = "precompiled", **cluster) -> dict:
    """The base config as a Magnum cluster (GPU group second, with a flavor)."""
    raw = as_magnum(base_config())
    raw["cluster"]["nodeGroups"][1]["flavor"] = "g1"
    if cluster.get("driver") == "heat":
        # Magnum's own autoscaler there must know node groups (tests/unit/test_heat_autoscaler.py).
        template = {"labels": HEAT_MIRRORED_AUTOSCALER} | (template or {})
    raw["cluster"]["magnum"] = cluster | ({"template": template} if template else {})
    if cluster.get("clusterApiDriver") != "magnum-capi-helm":
        # A magnum-capi-helm cluster's own GPU operator installs the driver (the key is refused there).
        raw["gpuOperator"] = {"driver": {"mode": mode}}
    return raw


def _problem(err: ConfigError, path: str) -> str:
    (message,) = [m for p, (_, m) in zip(err.paths, err.problems, strict=True) if p == path]
    return message


# --------------------------------------------------------------------------- the data


def test_data_names_only_declared_oses_and_known_drivers():
    named = set(support.PRECOMPILED) | support.COMPILED
    named |= {o for boots in support.MAGNUM_OS_DISTRO.values() for o in boots}
    assert named == set(support.OS_IDS)  # every OS listed is one something supports
    assert set(support.MAGNUM_OS_DISTRO) == set(support.GROUP_IMAGES) == set(MAGNUM_GROUP_LABELS)
    # Precompiled images are an Ubuntu matter, and each of them also has a compiled driver.
    assert set(support.PRECOMPILED) <= support.COMPILED
    for p in support.PRECOMPILED.values():
        assert p.branches and p.kernels and "generic" in p.flavors


def test_defaults_work_together():
    template, driver = MagnumTemplate(), DriverSettings()
    assert template.os in support.MAGNUM_OS_DISTRO["magnum-cluster-api"]
    assert driver.branch in support.PRECOMPILED[template.os].branches
    # The compiled mode builds the pinned driver, whose branch the default is.
    assert versions.GPU_DRIVER_VERSION.split(".")[0] == driver.branch
    parse(magnum())


@pytest.mark.parametrize("stack", STACKS)
def test_every_example_stack_passes(stack):
    settings = stack_settings(stack)
    for g in settings.gpu_groups:
        assert g.os is not None or settings.cluster.mode == "magnum"


def test_acme_prod_runs_precompiled_drivers_on_ubuntu():
    s = stack_settings("acme-prod")
    assert s.cluster.magnum.node_labeller == "magnum-cluster-api"
    assert s.cluster.magnum.template.os in support.PRECOMPILED
    assert s.gpu_operator.driver.mode == "precompiled"


# --------------------------------------------------------------------------- driver modes


@pytest.mark.parametrize("os_id,branch", [(o, b) for o, p in support.PRECOMPILED.items() for b in p.branches])
def test_precompiled_accepted_where_published(os_id, branch):
    parse(existing(os_id, "precompiled", branch))


@pytest.mark.parametrize("os_id", [o for o in support.OS_IDS if o not in support.PRECOMPILED])
def test_precompiled_refused_elsewhere(os_id):
    message = _problem(refused(existing(os_id)), GPU_OS)
    assert f"no precompiled driver images for {os_id}" in message
    assert "allowed with precompiled: ubuntu-22.04, ubuntu-24.04, ubuntu-26.04" in message
    assert ("driver mode compiled" if os_id in support.COMPILED else "driver mode preinstalled") in message


def test_precompiled_branch_not_published_names_the_branch():
    err = refused(existing("ubuntu-26.04", "precompiled", "580"))
    assert err.paths == [BRANCH]
    assert "ubuntu-26.04 in branches 595 only" in _problem(err, BRANCH)


@pytest.mark.parametrize("os_id", sorted(support.COMPILED))
def test_compiled_accepted_where_the_operator_builds(os_id):
    parse(existing(os_id, "compiled"))


@pytest.mark.parametrize("os_id", [o for o in support.OS_IDS if o not in support.COMPILED])
def test_compiled_refused_elsewhere(os_id):
    message = _problem(refused(existing(os_id, "compiled")), GPU_OS)
    assert f"builds no driver for {os_id}" in message and "driver mode preinstalled" in message
    assert "rhel-9" in message and "rocky-9" in message


@pytest.mark.parametrize("os_id", support.OS_IDS)
def test_preinstalled_accepted_everywhere(os_id):
    parse(existing(os_id, "preinstalled"))


@pytest.mark.parametrize("mode", ["precompiled", "compiled"])
def test_existing_gpu_group_must_say_its_os_when_drivers_are_installed(mode):
    err = refused(existing(None, mode))
    assert err.paths == [GPU_OS]
    assert "required on GPU group 'gpu' (mode existing)" in _problem(err, GPU_OS)


@pytest.mark.parametrize("raw", [existing(None, "preinstalled"), existing(None, enabled=False)],
                         ids=["preinstalled", "operator-disabled"])
def test_os_optional_when_the_operator_installs_no_driver(raw):
    parse(raw)


def test_cpu_group_needs_no_os():
    raw = base_config()
    assert "os" not in raw["cluster"]["nodeGroups"][0]
    parse(raw)


# --------------------------------------------------------------------------- Magnum drivers


@pytest.mark.parametrize("cluster,os_id,allowed", [
    (ON_HEAT, "ubuntu-24.04", "fedora-coreos"),
    ({}, "fedora-coreos", "ubuntu-22.04, ubuntu-24.04, ubuntu-26.04, debian-12"),
    ({"clusterApiDriver": "magnum-capi-helm"}, "rocky-9", "ubuntu-22.04, ubuntu-24.04, ubuntu-26.04, flatcar"),
    ({}, "rhel-9", "rocky-8, rocky-9, rocky-10"),
], ids=["heat-ubuntu", "capi-fedora-coreos", "capi-helm-rocky", "capi-rhel"])
def test_template_os_must_be_booted_by_the_driver(cluster, os_id, allowed):
    err = refused(magnum({"os": os_id}, "preinstalled", **cluster))
    assert err.paths == [TEMPLATE_OS]
    message = _problem(err, TEMPLATE_OS)
    assert f"does not boot {os_id}" in message and allowed in message


def test_heat_default_template_is_refused():
    err = refused(magnum(None, "preinstalled", **ON_HEAT))
    assert err.paths == [TEMPLATE_OS]


def test_heat_runs_gpus_only_with_preinstalled_drivers():
    template = HEAT["template"]
    parse(magnum(template, "preinstalled", **ON_HEAT))
    for mode, fallback in (("precompiled", "preinstalled"), ("compiled", "preinstalled")):
        err = refused(magnum(template, mode, **ON_HEAT))
        assert err.paths == [TEMPLATE_OS]  # the group inherits the template's OS: the error names that key
        message = _problem(err, TEMPLATE_OS)
        assert "GPU group 'gpu' runs fedora-coreos" in message and f"driver mode {fallback}" in message


@pytest.mark.parametrize("os_id", ["ubuntu-22.04", "ubuntu-24.04", "ubuntu-26.04"])
@pytest.mark.parametrize("cluster_api_driver", ["magnum-cluster-api"])
def test_cluster_api_drivers_run_precompiled_drivers_on_ubuntu(cluster_api_driver, os_id):
    parse(magnum({"os": os_id}, clusterApiDriver=cluster_api_driver))


def test_groups_sharing_the_template_os_share_one_error():
    raw = magnum({"os": "rocky-9"})
    raw["cluster"]["nodeGroups"].append({"name": "gpu2", "flavor": "g1", "gpu": {"model": "L4-24GB"}})
    err = refused(raw)
    assert err.paths == [TEMPLATE_OS]


@pytest.mark.parametrize("cluster,bad,words,good", [
    # magnum-cluster-api bootstraps every group for the template's os_distro.
    ({}, "flatcar", "os_distro ubuntu; allowed: ubuntu-22.04, ubuntu-24.04, ubuntu-26.04", "ubuntu-22.04"),
    # magnum-capi-helm boots every group from the template's image.
    ({"clusterApiDriver": "magnum-capi-helm"}, "ubuntu-22.04",
     "every node group boots from the template's image (ubuntu-24.04); allowed: ubuntu-24.04", "ubuntu-24.04"),
    # The cluster's own worker group (the first) has no image of its own with any driver.
    ({}, "ubuntu-22.04", "default worker group boots from the template's image (ubuntu-24.04)", "ubuntu-24.04"),
], ids=["magnum-cluster-api", "magnum-capi-helm", "default-group"])
def test_group_os_must_fit_the_template(cluster, bad, words, good):
    raw = magnum({"os": "ubuntu-24.04"}, "preinstalled", **cluster)
    index = 0 if "default" in words else 1
    path = f"inference-platform:cluster.nodeGroups[{raw['cluster']['nodeGroups'][index]['name']}].os"
    raw["cluster"]["nodeGroups"][index]["os"] = bad
    err = refused(raw)
    assert err.paths == [path]
    assert words in _problem(err, path)
    raw["cluster"]["nodeGroups"][index]["os"] = good
    parse(raw)


def test_cpu_group_os_checked_against_the_driver_too():
    raw = magnum()
    raw["cluster"]["nodeGroups"][0]["os"] = "rhel-9"
    assert refused(raw).paths == ["inference-platform:cluster.nodeGroups[cpu].os"]


def test_gpu_group_with_its_own_image_must_say_its_os():
    raw = magnum()
    raw["cluster"]["nodeGroups"][1]["image"] = "gpu-image"
    err = refused(raw)
    assert err.paths == [GPU_OS]
    assert "it sets its own image" in _problem(err, GPU_OS)
    raw["cluster"]["nodeGroups"][1]["os"] = "ubuntu-22.04"
    parse(raw)


def test_template_id_needs_a_described_os():
    raw = magnum(templateId="k8s-template")
    err = refused(raw)
    assert err.paths == [GPU_OS]
    assert "templateId is set without template.os" in _problem(err, GPU_OS)
    raw["cluster"]["magnum"]["template"] = {"os": "ubuntu-22.04"}
    parse(raw)
    raw["cluster"]["magnum"]["template"] = {"os": "flatcar"}
    assert refused(raw).paths == [TEMPLATE_OS]


# --------------------------------------------------------------------------- rendering


@pytest.mark.parametrize("os_id,mode", [("ubuntu-26.04", "precompiled"), ("rocky-9", "compiled"),
                                        ("flatcar", "preinstalled")])
def test_gpu_operator_values_render_with_known_keys(reference, os_id, mode):
    values = gpu_operator_values_of(parse(existing(os_id, mode)))
    defaults = conformance.vendored_chart_values("gpu-operator", versions.GPU_OPERATOR.version)
    assert conformance.unknown_values_keys(values, defaults) == []
    assert values["driver"]["enabled"] == (mode != "preinstalled")


# --------------------------------------------------------------------------- the image's kernel

@pytest.mark.parametrize("image,kernel", [
    ("ubuntu-24.04-6.8.0-59-generic", ("6.8.0-59-generic", "6.8", "generic")),
    ("capi-ubuntu-2404-kube-v1.34.4-6.8.0-1024-azure-fde", ("6.8.0-1024-azure-fde", "6.8", "azure-fde")),
    ("ubuntu-24.04", None),
    ("ubuntu-2404-kube-v1.34.4", None),
])
def test_an_image_name_names_its_kernel_only_as_uname_prints_it(image, kernel):
    assert support.image_kernel(image) == kernel


def test_a_template_image_on_a_kernel_without_precompiled_drivers_is_refused_at_the_image_with_the_fix():
    err = refused(magnum({"os": "ubuntu-24.04", "image": "ubuntu-24.04-6.11.0-19-generic"}))
    message = _problem(err, "inference-platform:cluster.magnum.template.image")
    assert "GPU group 'gpu'" in message and "kernel 6.11.0-19-generic" in message
    assert "kernel lines 6.8" in message and "driver mode compiled" in message
    # A published line and flavour, a name without a kernel, or a compiled driver: accepted.
    parse(magnum({"os": "ubuntu-24.04", "image": "ubuntu-24.04-6.8.0-59-generic"}))
    parse(magnum({"os": "ubuntu-24.04", "image": "ubuntu-24.04"}))
    parse(magnum({"os": "ubuntu-24.04", "image": "ubuntu-24.04-6.11.0-19-generic"}, "compiled"))
    flavor = refused(magnum({"os": "ubuntu-22.04", "image": "ubuntu-22.04-5.15.0-1070-kvm"}))
    assert "flavours aws, azure, generic, nvidia, oracle" in _problem(flavor, "inference-platform:cluster.magnum.template.image")


def test_a_gpu_groups_own_image_is_checked_where_the_driver_boots_it():
    raw = magnum({"os": "ubuntu-24.04"})
    raw["cluster"]["nodeGroups"][1] |= {"image": "ubuntu-24.04-6.14.0-1003-nvidia", "os": "ubuntu-24.04"}
    err = refused(raw)
    assert "kernel 6.14.0-1003-nvidia" in _problem(err, "inference-platform:cluster.nodeGroups[gpu].image")
