"""`gpuOperator` and `coldStart`: the GPU operator's driver mode and the cold-start stage times."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from inference_platform.settings.base import Model


class DriverSettings(Model):
    mode: Literal["precompiled", "compiled", "preinstalled"] = "precompiled"
    """`precompiled`: driver images NVIDIA builds per kernel (fastest node start; Ubuntu only); `compiled`: built on each node (the OSes the GPU operator supports); `preinstalled`: the node image has the driver (any OS). Checked against each GPU group's `os`."""
    branch: str = Field(default="595", pattern=r"^[0-9]{3}$")
    """Driver branch (precompiled: one NVIDIA publishes for the nodes' OS, 580 or 595; 595 only on Ubuntu 26.04) or the major of the pinned driver version (compiled: 595)."""


class GpuOperatorSettings(Model):
    enabled: bool = True
    """Install the NVIDIA GPU operator, and with it Node Feature Discovery, which applies the node groups' labels and taints. Off: the nodes of an existing cluster must carry them already; a Magnum cluster then may not have GPU groups, node labels or taints. On `magnum-capi-helm` the cluster runs its own operator and NFD (capi-helm-charts addons): the platform reuses them and adds only its node rules, so `driver`, `dcgmExporter`, node taints, time-slicing, MPS, custom MIG mixes and MIG strategy `mixed` are refused there."""
    driver: DriverSettings = DriverSettings()
    """NVIDIA driver installation."""
    dcgm_exporter: bool = True
    """Run the DCGM exporter (GPU metrics) with its ServiceMonitor."""


class StageSeconds(Model):
    node_boot: int = Field(default=120, ge=0, le=7200)
    """Seconds for a new VM to boot and join the cluster."""
    driver_install: int = Field(default=180, ge=0, le=7200)
    """Seconds for the GPU operator to prepare a node (precompiled drivers)."""
    driver_compile: int = Field(default=300, ge=0, le=7200)
    """Extra seconds to build the driver's kernel module on the node (driver mode `compiled`)."""
    image_pull: int = Field(default=360, ge=0, le=7200)
    """Seconds to pull and extract a Triton image (about 360 for 20 GB gzip layers, 150 with zstd)."""
    weight_fetch: int = Field(default=210, ge=0, le=7200)
    """Seconds Triton needs to download an S3 model repository to local disk before loading it (file-share versions read in place)."""
    model_load: int = Field(default=420, ge=0, le=7200)
    """Seconds for Triton to load the model."""


class ColdStartSettings(Model):
    image_pre_pull: bool = True
    """Pre-pull every Triton image on the GPU groups it runs on: a replica that takes a spare slot, or lands on a node that is already up, starts without the pull. It does not shorten a new node's start (the kubelet pulls one image at a time, so the pull follows or delays the driver's images)."""
    spare_slots: dict[str, Annotated[int, Field(ge=0, le=64)]] = {}
    """Per GPU group, GPU slots held free by low-priority placeholder pods so a new replica starts at once (0-64 each)."""
    stage_seconds: StageSeconds = StageSeconds()
    """Stage durations used for the plan's cold-start estimate."""
