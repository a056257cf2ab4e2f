"""How a Triton replica stops without cutting a request still within its route timeout.

The preStop pause, Triton's exit timeout, the termination grace period and the Istio
sidecar's drain of a version's pods, and the check of a rendered pod template against them.
"""

import json
from dataclasses import dataclass
from typing import Optional

from inference_platform.settings.serving import Service, Version
from inference_platform.settings.triton_flags import EXIT_TIMEOUT_FLAG

# A terminating pod keeps serving while its removal from the Service's endpoints reaches
# every gateway's proxy (EndpointSlice -> istiod -> xDS push); Triton gets SIGTERM after it.
# istiod debounces EDS pushes for up to PILOT_DEBOUNCE_MAX, 10 s by default (istio
# pilot/pkg/features/tuning.go, PILOT_ENABLE_EDS_DEBOUNCE on): the pause outlasts it by 5 s
# for the EndpointSlice update before it and the push after it.
ISTIOD_DEBOUNCE_MAX_SECONDS = 10
ENDPOINT_REMOVAL_SECONDS = ISTIOD_DEBOUNCE_MAX_SECONDS + 5
# Beyond Triton's exit timeout: stopping the endpoints, unloading models, the sidecar's exit.
EXIT_SLACK_SECONDS = 15
# Behind the OpenAI frontend, Triton runs in-process with the Python API's exit timeout
# (triton-inference-server/core r25.01 python/tritonserver/_api/_server.py, Options.exit_timeout
# = 30; the frontend's main.py sets none), and on SIGTERM the frontend stops its KServe HTTP and
# gRPC frontends before stopping Triton, so their requests still running would be cut.
FRONTEND_TRITON_EXIT_SECONDS = 30


@dataclass(frozen=True)
class Shutdown:
    """How a Triton replica stops (seconds from the pod's deletion).

    0: the pod is marked terminating; its endpoint starts disappearing from the gateways,
       and the native sidecar's preStop puts Envoy into a graceful drain of inbound
       connections, where in-flight requests go on.
    pre_stop: Triton gets SIGTERM. It refuses new HTTP connections, serves the open ones
       until they close, then reports not ready, refuses new inferences and waits for the
       in-flight ones; `--exit-timeout-secs` bounds both waits together.
    pre_stop + exit_timeout: Triton exits; the native sidecar gets SIGTERM only then.
    grace: the kubelet kills whatever is left.
    """

    pre_stop_seconds: int
    exit_timeout_seconds: int
    grace_seconds: int

    @property
    def sidecar_drain_seconds(self) -> int:
        """How long the sidecar must keep serving: until Triton has exited."""
        return self.pre_stop_seconds + self.exit_timeout_seconds


def exit_timeout_seconds(service: Service, version: Version) -> int:
    """Triton's --exit-timeout-secs: the route timeout (a request admitted just before
    SIGTERM may legitimately run that long), or the version's larger value."""
    chosen = version.server_args.get(EXIT_TIMEOUT_FLAG)
    return max(service.route_timeout_whole_seconds, int(chosen) if isinstance(chosen, str) else 0)


def shutdown(service: Service, version: Version) -> Shutdown:
    if version.serves_openai:
        # The pod drains before SIGTERM: the preStop pause outlasts the endpoint removal by the
        # longest generation the route lets run (the route timeout), so streams and KServe
        # requests admitted before the removal end while every frontend still serves.
        pre_stop = ENDPOINT_REMOVAL_SECONDS + service.route_timeout_whole_seconds
        return Shutdown(pre_stop_seconds=pre_stop, exit_timeout_seconds=FRONTEND_TRITON_EXIT_SECONDS,
                        grace_seconds=pre_stop + FRONTEND_TRITON_EXIT_SECONDS + EXIT_SLACK_SECONDS)
    exit_timeout = exit_timeout_seconds(service, version)
    return Shutdown(
        pre_stop_seconds=ENDPOINT_REMOVAL_SECONDS,
        exit_timeout_seconds=exit_timeout,
        grace_seconds=ENDPOINT_REMOVAL_SECONDS + exit_timeout + EXIT_SLACK_SECONDS,
    )


def sidecar_annotations(plan: Shutdown) -> dict[str, str]:
    """Keep the Istio sidecar serving until Triton has drained.

    A native sidecar (an init container with restartPolicy Always) is stopped by the
    kubelet only after the Triton container has exited; Istio 1.30's injector picks it by
    default only when every node's kubelet is 1.33 or newer, so it is asked for per pod.
    terminationDrainDuration covers an injector that still injects a classic sidecar, which
    gets SIGTERM with Triton and would otherwise exit after 5 s.
    """
    return {
        "sidecar.istio.io/nativeSidecar": "true",
        "proxy.istio.io/config": json.dumps({"terminationDrainDuration": f"{plan.sidecar_drain_seconds}s"}),
    }


def _flag_value(args: list[str], flag: str) -> Optional[str]:
    values = [a.split("=", 1)[1] for a in args if a.startswith(f"--{flag}=")]
    return values[-1] if values else None


def _seconds(duration: str) -> float:
    return int(duration[:-2]) / 1000 if duration.endswith("ms") else float(duration.removesuffix("s"))


def shutdown_problems(template: dict, route_timeout_seconds: float) -> list[str]:
    """What in a rendered Triton pod template would cut a request still within the route
    timeout on rollout or scale-down: Triton's exit timeout, the preStop pause, the
    termination grace period and the sidecar's drain checked against each other."""
    spec, annotations = template["spec"], template["metadata"].get("annotations", {})
    triton = next(c for c in spec["containers"] if c["name"] == "triton")
    pre_stop = ((triton.get("lifecycle") or {}).get("preStop") or {}).get("sleep", {}).get("seconds", 0)
    grace = spec.get("terminationGracePeriodSeconds", 30)  # the Kubernetes default
    problems = []
    if triton.get("command", [None])[0] == "tritonserver":
        exit_timeout = int(_flag_value(triton["args"], EXIT_TIMEOUT_FLAG) or 30)  # Triton's default
        if exit_timeout < route_timeout_seconds:
            problems.append(f"Triton's exit timeout {exit_timeout}s is shorter than the route timeout {route_timeout_seconds:g}s")
    else:  # the OpenAI frontend: the pod drains in its preStop pause
        exit_timeout = FRONTEND_TRITON_EXIT_SECONDS
        if pre_stop - ENDPOINT_REMOVAL_SECONDS < route_timeout_seconds:
            problems.append(f"the OpenAI frontend's preStop {pre_stop}s leaves less than the route timeout "
                            f"{route_timeout_seconds:g}s after the endpoint removal ({ENDPOINT_REMOVAL_SECONDS}s)")
    if grace <= pre_stop + exit_timeout:
        problems.append(f"grace period {grace}s does not outlast preStop {pre_stop}s + exit timeout {exit_timeout}s")
    if annotations.get("sidecar.istio.io/nativeSidecar") != "true":
        drain = _seconds(json.loads(annotations.get("proxy.istio.io/config", "{}")).get("terminationDrainDuration", "5s"))
        if not pre_stop + exit_timeout <= drain < grace:
            problems.append(f"a classic sidecar drains {drain:g}s: not from preStop + exit timeout "
                            f"({pre_stop + exit_timeout}s) to the grace period ({grace}s)")
    return problems
