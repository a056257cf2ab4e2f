"""How KubeRay v1.7.0 turns a Ray container's own command and args into what the pod runs, and
which volumes it adds to the pod (ray-operator/controllers/ray/common/pod.go at tag v1.7.0:
BuildPod, convertCmdToString, addEmptyDir; utils/util.go GetContainerCommand)."""

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


def pod_volumes(template: dict, *, head: bool, in_tree_autoscaling: bool, ray_start_params: dict) -> list[dict]:
    """The volumes of the pod KubeRay makes of a head or worker group's template (BuildPod,
    addEmptyDir, makeEmptyDirVolume): the template's, then `shared-mem` at /dev/shm (medium
    Memory) unless `plasma-directory` is set, and on a head with in-tree autoscaling `ray-logs` at
    /tmp/ray (the default medium, the node's disk), each unless the Ray container (the first)
    already mounts its path, and only if no volume of that name exists."""
    volumes = list(template["spec"].get("volumes") or [])
    mounted = {m["mountPath"] for m in template["spec"]["containers"][0].get("volumeMounts") or []}

    def add(name: str, path: str, medium: str) -> None:
        if path not in mounted and not any(v["name"] == name for v in volumes):
            volumes.append({"name": name, "emptyDir": {"medium": medium}})

    if "plasma-directory" not in ray_start_params:
        add("shared-mem", "/dev/shm", "Memory")
    if head and in_tree_autoscaling:
        add("ray-logs", "/tmp/ray", "")
    return volumes
