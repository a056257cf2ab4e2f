"""Triton's API surface: what a client reaches through the gateway, and the key that closes the rest.

Triton groups its endpoints into restriction categories (triton-inference-server/server r25.01,
src/restricted_features.h RESTRICTED_CATEGORY_NAMES). Clients need inference, health and
server/model metadata (model ready is in `health`); the others (model control and repository,
model config, shared memory, statistics, trace, logging) change or reveal the server and stay
closed, twice:
- in Triton: `--http-restricted-api` / `--grpc-restricted-protocol` close them to any request
  without the service's admin key (a generated password in a Secret, passed as an env var);
- in the mesh: the VirtualService routes and the AuthorizationPolicy let through only the
  paths and gRPC methods of the open categories (tests/catalogues/tritonserver-r25.01-api.txt
  lists every endpoint and its category).
"""

from __future__ import annotations

# src/restricted_features.h (r25.01): RESTRICTED_CATEGORY_NAMES, in that order.
CATEGORIES = ("health", "metadata", "inference", "shared-memory", "model-config", "model-repository",
              "statistics", "trace", "logging")
OPEN_CATEGORIES = ("health", "metadata", "inference")
CLOSED_CATEGORIES = tuple(c for c in CATEGORIES if c not in OPEN_CATEGORIES)

# The request header that carries the admin key. Triton compares an HTTP header of this name
# (http_server.cc RespondIfRestricted) and gRPC metadata `triton-grpc-protocol-<name>`
# (command_line_parser.cc prefixes grpc_server.h kRestrictedProtocolHeaderTemplate).
ADMIN_KEY_HEADER = "inference-platform-admin-key"
GRPC_ADMIN_KEY_HEADER = f"triton-grpc-protocol-{ADMIN_KEY_HEADER}"
ADMIN_KEY_ENV = "TRITON_ADMIN_KEY"
ADMIN_KEY_SECRET_KEY = "key"


def admin_key_secret_name(service: str) -> str:
    return f"{service}-triton-admin-key"


def restriction_flags() -> list[str]:
    """Triton's flags that close every category but the open ones to requests without the key.

    The format is `<categories>:<header>=<value>` (command_line_parser.cc
    ParseRestrictedFeatureOption: categories split on ',', then ParseGenericConfigOption on ':'
    and the first '='). The value is `$(TRITON_ADMIN_KEY)`: Kubernetes expands `$(VAR)` in a
    container's args from its environment (core/v1 Container.args), so the key never appears
    in the manifest, only in the Secret the env var reads.
    """
    value = f"{','.join(CLOSED_CATEGORIES)}:{ADMIN_KEY_HEADER}=$({ADMIN_KEY_ENV})"
    return [f"--http-restricted-api={value}", f"--grpc-restricted-protocol={value}"]


def admin_key_env(secret_name: str) -> dict:
    """The container env var the restriction flags read, from the service's admin-key Secret."""
    return {"name": ADMIN_KEY_ENV, "valueFrom": {"secretKeyRef": {"name": secret_name, "key": ADMIN_KEY_SECRET_KEY}}}


# --------------------------------------------------------------------------- the mesh's allow-list

# HTTP paths of the open categories (http_server.cc r25.01, HTTPAPIServer::Handle and its
# regexes): `/v2` (server metadata), `/v2/health/live|ready` (server_regex_), and model_regex_
# with kind "" (model metadata), ready, infer, generate and generate_stream (the generate
# extension). An RE2 pattern that Envoy matches against the whole path without the query
# (Istio's VirtualService `uri.regex` becomes route `safe_regex`: istio 1.30.3
# pilot/pkg/networking/core/route/route.go TranslateRouteMatch).
MODEL_KINDS = ("infer", "generate", "generate_stream", "ready")
OPEN_HTTP_PATH_REGEX = (r"/v2(/health/(live|ready))?"
                        rf"|/v2/models/[^/]+(/versions/[0-9]+)?(/({'|'.join(MODEL_KINDS)}))?")
# Triton answers this path with every model's statistics before it looks for a model name
# (Handle's first test), so the model pattern above must not take it.
CLOSED_MODEL_PATHS = ("/v2/models/stats",)

# gRPC methods of the open categories (src/grpc/grpc_server.cc r25.01: CommonHandler's
# Register* with their category, Server::Server's infer handlers; service and method names
# from triton-inference-server/common protobuf/grpc_service.proto, and grpc.health.v1 Check).
OPEN_GRPC_METHODS = (
    "/inference.GRPCInferenceService/ServerLive",
    "/inference.GRPCInferenceService/ServerReady",
    "/inference.GRPCInferenceService/ModelReady",
    "/inference.GRPCInferenceService/ServerMetadata",
    "/inference.GRPCInferenceService/ModelMetadata",
    "/inference.GRPCInferenceService/ModelInfer",
    "/inference.GRPCInferenceService/ModelStreamInfer",
    "/grpc.health.v1.Health/Check",
)
_INFERENCE_SERVICE = "/inference.GRPCInferenceService/"
OPEN_GRPC_PATH_REGEX = (
    _INFERENCE_SERVICE.replace(".", r"\.")
    + f"({'|'.join(m.removeprefix(_INFERENCE_SERVICE) for m in OPEN_GRPC_METHODS if m.startswith(_INFERENCE_SERVICE))})"
    + "|" + "|".join(m.replace(".", r"\.") for m in OPEN_GRPC_METHODS if not m.startswith(_INFERENCE_SERVICE)))


def open_http_policy_paths() -> list[str]:
    """The open HTTP paths as AuthorizationPolicy paths: exact paths and `{*}` templates (one
    path segment; istio/api 1.30.3 security/v1beta1/authorization_policy.proto Operation.paths)."""
    models = ["/v2/models/{*}", "/v2/models/{*}/versions/{*}"]
    return ["/v2", "/v2/health/live", "/v2/health/ready", *models,
            *(f"{m}/{kind}" for m in models for kind in MODEL_KINDS)]
