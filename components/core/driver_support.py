"""Which node OS each GPU driver mode and each Magnum driver can work with: the rules as data.

A node's OS is declared (`cluster.magnum.template.os`, `cluster.nodeGroups[].os`): an image
name says nothing the platform can read. The checks in config.py look the declared OS up
here. A leaf module: it imports nothing from the package.

Sources (at the release or commit named):
- GPU operator v26.7.0: NVIDIA/cloud-native-docs gpu-operator/platform-support.rst at
  52dcb7b8 (the page that lists 26.7.0), sections "Supported Operating Systems and
  Kubernetes Platforms" and "Supported Precompiled Drivers"; gpu-operator/precompiled-drivers.rst.
- Published driver images: NVIDIA/gpu-driver-container at 06a208c, .common-ci.yml
  (`.driver-versions*` and `.driver-versions-precompiled-*` matrices) and .nvidia-ci.yml
  (the jobs that publish them, PUBLISH_VERSIONS 580.178.04 595.91.07 610.57.04).
- Magnum drivers: each driver's `provides` (the `os` Magnum matches with the image's
  `os_distro` property): openstack/magnum stable/2026.1
  drivers/k8s_fedora_coreos_v1/driver.py; vexxhost/magnum-cluster-api v0.38.1 driver.py
  and utils.AVAILABLE_OPERATING_SYSTEMS; openstack/magnum-capi-helm 1.4.0 driver.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, Optional, get_args

# The OSes a Magnum driver boots or the GPU operator supports. Ubuntu 20.04 is left out:
# magnum-cluster-api still boots it (os_distro ubuntu-focal), but the GPU operator v26.7.0
# lists it in no mode.
OsId = Literal[
    "ubuntu-22.04", "ubuntu-24.04", "ubuntu-26.04", "debian-12", "debian-13",
    "rhel-8", "rhel-9", "rhel-10", "rocky-8", "rocky-9", "rocky-10", "flatcar", "fedora-coreos",
]
OS_IDS: tuple[str, ...] = get_args(OsId)


@dataclass(frozen=True)
class Precompiled:
    """Precompiled driver images NVIDIA publishes for one OS (tag `<branch>-<kernel>-<os>`)."""

    branches: tuple[str, ...]
    kernels: tuple[str, ...]
    """Kernel lines built (the image's kernel must be one of them)."""
    flavors: tuple[str, ...]
    """Kernel flavours built (`uname -r` ends in one of them)."""


_FLAVORS = ("aws", "azure", "generic", "nvidia", "oracle")
_FLAVORS_FDE = ("aws", "azure", "azure-fde", "generic", "nvidia", "oracle")
# "Supported Precompiled Drivers" table; the same matrix publishes them (.common-ci.yml
# .driver-versions-precompiled-ubuntu{22,24,26}.04). Nothing else is published: RHEL,
# Rocky and the rest need compiled or preinstalled drivers.
PRECOMPILED: dict[str, Precompiled] = {
    "ubuntu-22.04": Precompiled(("580", "595"), ("5.15", "6.8"), _FLAVORS),
    "ubuntu-24.04": Precompiled(("580", "595"), ("6.8",), _FLAVORS_FDE),
    "ubuntu-26.04": Precompiled(("595",), ("7.0",), _FLAVORS_FDE),
}

# The OSes the GPU operator v26.7.0 supports on Kubernetes ("Supported Operating Systems":
# Ubuntu 22.04/24.04/26.04, RHEL 8.8-10.2, Rocky 8.10/9.7/10.1), each with driver images of
# the pinned 595.91.07 (.nvidia-ci.yml image-<dist> jobs). Since 26.7.0 the operator tags
# RHEL and Rocky images by major version (rhel9, rocky10). Debian, Flatcar and Fedora
# CoreOS have no driver image.
COMPILED: frozenset[str] = frozenset({
    "ubuntu-22.04", "ubuntu-24.04", "ubuntu-26.04", "rhel-8", "rhel-9", "rhel-10", "rocky-8", "rocky-9", "rocky-10",
})

_UBUNTU = {"ubuntu-22.04": "ubuntu", "ubuntu-24.04": "ubuntu", "ubuntu-26.04": "ubuntu"}
# Per Magnum driver: the OSes it boots -> the `os_distro` the Glance image must carry.
MAGNUM_OS_DISTRO: dict[str, dict[str, str]] = {
    # k8s_fedora_coreos_v1 provides os fedora-coreos only.
    "heat": {"fedora-coreos": "fedora-coreos"},
    # Provides ubuntu, ubuntu-focal, debian, flatcar and rockylinux. Every group is
    # bootstrapped for the template's OS: resources.py sets the ClusterClass variable
    # operatingSystem from the template's os_distro (utils.get_operating_system).
    "magnum-cluster-api": {
        **_UBUNTU, "debian-12": "debian", "debian-13": "debian", "flatcar": "flatcar",
        "rocky-8": "rockylinux", "rocky-9": "rockylinux", "rocky-10": "rockylinux",
    },
    # Provides ubuntu and flatcar.
    "magnum-capi-helm": {**_UBUNTU, "flatcar": "flatcar"},
}
# Drivers that boot each node group from the group's own image: heat (k8s_template_def.py
# maps minion_image to the node group's image_id) and magnum-cluster-api (resources.py looks
# up node_group.image_id); magnum-capi-helm 1.4.0 boots every group from the template's image
# (_update_helm_release: one machineImageId).
GROUP_IMAGES = {"heat": True, "magnum-cluster-api": True, "magnum-capi-helm": False}


def _listing(ids) -> str:
    return ", ".join(ids)


def mode_oses(mode: str) -> tuple[str, ...]:
    """The OSes on which the GPU operator's drivers in `mode` can load."""
    if mode == "precompiled":
        return tuple(PRECOMPILED)
    return tuple(o for o in OS_IDS if mode == "preinstalled" or o in COMPILED)


def driver_fallback(os_id: str) -> str:
    """The driver mode that can work on os_id when the chosen one cannot."""
    return "compiled" if os_id in COMPILED else "preinstalled (an image that has the NVIDIA driver)"


def driver_mode_problem(os_id: str, mode: str, branch: str) -> Optional[tuple[str, str]]:
    """Why the GPU operator's drivers in `mode` cannot load on os_id: ("os" or "branch",
    what is wrong and what is allowed), or None."""
    if mode == "precompiled":
        published = PRECOMPILED.get(os_id)
        if published is None:
            return "os", (f"NVIDIA publishes no precompiled driver images for {os_id}; allowed with precompiled: "
                          f"{_listing(mode_oses(mode))}; on {os_id} use driver mode {driver_fallback(os_id)}")
        if branch not in published.branches:
            return "branch", (f"NVIDIA publishes precompiled drivers for {os_id} in branches "
                              f"{_listing(published.branches)} only; allowed: {_listing(published.branches)}")
    elif mode == "compiled" and os_id not in COMPILED:
        return "os", (f"the GPU operator v26.7.0 builds no driver for {os_id}; allowed with compiled: "
                      f"{_listing(mode_oses(mode))}; on {os_id} use driver mode {driver_fallback(os_id)}")
    return None


# A kernel release as `uname -r` prints it, inside an image name (`ubuntu-24.04-6.8.0-59-generic`):
# version, ABI number, flavour.
_KERNEL = re.compile(r"(?<![0-9.])(\d+\.\d+)\.\d+-\d+-([a-z]+(?:-[a-z]+)*)")


def image_kernel(image: str) -> Optional[tuple[str, str, str]]:
    """The kernel an image's name names, as (release, line, flavour), or None."""
    found = _KERNEL.search(image)
    return (found.group(0), found.group(1), found.group(2)) if found else None


def precompiled_kernel_problem(os_id: str, image: str) -> Optional[str]:
    """Why the precompiled driver cannot load on the kernel `image` names: NVIDIA tags a
    precompiled driver `<branch>-<kernel>-<os>` (gpu-operator v26.7.0 object_controls.go
    resolveDriverTag) and publishes the kernel lines and flavours of PRECOMPILED only, so a node
    on another kernel pulls a tag that does not exist and never gets a GPU. None when the name
    names no kernel (then nothing can be told before the node boots) or a published one."""
    published, kernel = PRECOMPILED.get(os_id), image_kernel(image)
    if published is None or kernel is None:
        return None
    release, line, flavor = kernel
    if line in published.kernels and flavor in published.flavors:
        return None
    return (f"image {image!r} runs kernel {release}: NVIDIA publishes precompiled drivers for {os_id} on kernel "
            f"lines {_listing(published.kernels)} with flavours {_listing(published.flavors)} only, so the driver "
            f"image for this kernel does not exist; use an image with such a kernel, or driver mode compiled")


def magnum_boot_problem(driver: str, os_id: str) -> Optional[str]:
    """Why the Magnum driver cannot boot os_id, or None."""
    booted = MAGNUM_OS_DISTRO[driver]
    if os_id in booted:
        return None
    return f"the {driver} driver does not boot {os_id}; allowed: {_listing(booted)}"


def magnum_group_problem(driver: str, template_os: str, group_os: str, default_group: bool = False) -> Optional[str]:
    """Why a node group cannot run group_os in a cluster whose template runs template_os, or
    None. The cluster's default group (the first) always boots from the template's image."""
    if default_group or not GROUP_IMAGES[driver]:
        if group_os != template_os:
            whose = "the cluster's default worker group" if default_group else f"{driver}: every node group"
            return f"{whose} boots from the template's image ({template_os}); allowed: {template_os}, or remove the key"
        return None
    distro = MAGNUM_OS_DISTRO[driver].get(template_os)
    if distro is not None and MAGNUM_OS_DISTRO[driver].get(group_os) != distro:
        same = [o for o, d in MAGNUM_OS_DISTRO[driver].items() if d == distro]
        return (f"{driver} bootstraps every node group for the template's os_distro {distro}; "
                f"allowed: {_listing(same)}")
    return None
