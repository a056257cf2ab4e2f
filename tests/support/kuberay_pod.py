"""How KubeRay v1.7.0 turns a Ray container's own command and args into what the pod runs
(ray-operator/controllers/ray/common/pod.go at tag v1.7.0: BuildPod, convertCmdToString;
utils/util.go GetContainerCommand)."""

from __future__ import annotations


def _as_string(parts: list[str]) -> str:
    # convertCmdToString: each part between two spaces.
    return "".join(f" {p} " for p in parts)


def container_script(container: dict, ray_start: str) -> list[str]:
    """The command the Ray container runs: its own command and args, then `ulimit` and the
    generated `ray start`, in `/bin/bash -c --` (ENABLE_LOGIN_SHELL unset)."""
    cmd = _as_string(container.get("command") or []) + _as_string(container.get("args") or [])
    if "ray start" in cmd:
        raise ValueError("KubeRay would run the container's command instead of its own `ray start`")
    generated = f"ulimit -n ${{RAY_START_ULIMIT_OPEN_FILES:-65536}}; {ray_start}"
    return ["/bin/bash", "-c", "--", f"{cmd} && {generated}" if cmd else generated]
