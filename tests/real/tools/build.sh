#!/usr/bin/env bash
# Builds the real tools of tests/real from the Go module proxy (and ../shared/upstream for the two
# modules the proxy does not serve): the Pulumi CLI and its Python language host, the kubernetes and
# random providers, kube-apiserver / controller-manager / scheduler / kubectl, etcd and KWOK.
#
# Each tool lands in $REAL_TOOLS_DIR/<tool>-<version>/ (default ~/.cache/inference-platform/real-tools),
# outside the repository and keyed by version, so a second run and CI on the same machine build nothing.
# A tool whose directory holds a `.built` stamp is skipped.
#
#   build.sh all | pulumi | kubernetes-provider | random-provider | kubernetes | etcd | kwok | bindir
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../../.." && pwd)"
SHARED="${PLATFORM_SHARED_DIR:-$REPO/../shared}"
TOOLS="${REAL_TOOLS_DIR:-$HOME/.cache/inference-platform/real-tools}"
export GOFLAGS="-mod=mod" CGO_ENABLED=0 GOTOOLCHAIN=local

# The versions (the provider plugins are named after the Python SDKs' pins in pyproject.toml, which the
# engine asks for; what they are built from is below and in docs/testing.md).
PULUMI_VERSION=v3.274.1
K8S_PROVIDER_MODULE=github.com/pulumi/pulumi-kubernetes/provider/v4
K8S_PROVIDER_COMMIT=v4.0.0-20260115033456-f47bc2d6f199
K8S_PROVIDER_SDK=v4.24.0
K8S_PLUGIN_VERSION=4.34.2
RANDOM_PLUGIN_VERSION=4.21.4
KUBERNETES_VERSION=v1.34.4
ETCD_VERSION=v3.6.14
KWOK_VERSION=v0.8.0

log() { printf '%s build.sh: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# go_or_refused <what> <cmd...>: runs a go command; on failure prints one line naming what was refused.
go_or_refused() {
    local what="$1"; shift
    local out
    if ! out="$("$@" 2>&1)"; then
        printf '%s\n' "$out" | tail -20 >&2
        local refused
        refused="$(printf '%s\n' "$out" | grep -oE '[a-zA-Z0-9./_-]+@v[0-9][^: ]*: (reading|verifying|invalid version)[^\n]*' | head -1 || true)"
        echo "build.sh: cannot build $what${refused:+: module refused: $refused}" >&2
        return 1
    fi
}

stamp_ok() { [ -f "$1/.built" ]; }

timed() {  # timed <dir> <function>: runs the build, records its seconds in <dir>/.built
    local dir="$1" fn="$2" start
    if stamp_ok "$dir"; then log "$(basename "$dir"): cached in $dir"; return 0; fi
    start=$(date +%s)
    rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
    "$fn" "$dir.tmp"
    rm -rf "$dir" && mv "$dir.tmp" "$dir"
    echo "built_in_seconds=$(( $(date +%s) - start ))" >"$dir/.built"
    log "$(basename "$dir"): built in $(( $(date +%s) - start )) s"
}

wrapper() {  # wrapper <dir> <module>: an empty Go module to build others' packages in
    mkdir -p "$1"
    printf 'module %s\n\ngo 1.26\n' "$2" >"$1/go.mod"
}

module_dir() { go mod download -json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])'; }

build_pulumi() {
    local out="$1" src="$TOOLS/src/pulumi-$PULUMI_VERSION"
    rm -rf "$src" && wrapper "$src" real-tools/pulumi
    mkdir -p "$src/langhost"
    cp "$SHARED/upstream/pulumi-language-python/main.go" "$src/langhost/main.go"
    cat >"$src/tools.go" <<'EOF'
//go:build tools

package tools

import _ "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"
EOF
    (cd "$src"
     go_or_refused "pulumi $PULUMI_VERSION" go get "github.com/pulumi/pulumi/pkg/v3@$PULUMI_VERSION" "github.com/pulumi/pulumi/sdk/v3@$PULUMI_VERSION"
     go mod edit -replace github.com/atotto/clipboard=github.com/tgummerer/clipboard@v0.0.0-20241001131231-d02d263e614e
     go_or_refused "pulumi modules" go mod tidy
     local ld="-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$PULUMI_VERSION"
     go_or_refused "pulumi CLI" go build -trimpath -ldflags "$ld" -o "$out/pulumi" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
     go_or_refused "pulumi-language-python" go build -trimpath -ldflags "$ld" -o "$out/pulumi-language-python" ./langhost)
    local sdk; sdk="$(cd "$src" && module_dir "github.com/pulumi/pulumi/sdk/v3@$PULUMI_VERSION")"
    install -m 0755 "$sdk/python/cmd/pulumi-language-python-exec" "$out/pulumi-language-python-exec"
    install -m 0755 "$sdk/python/dist/pulumi-resource-pulumi-python" "$out/pulumi-resource-pulumi-python"
}

build_kubernetes_provider() {
    local out="$1" src="$TOOLS/src/pulumi-kubernetes-$K8S_PLUGIN_VERSION"
    rm -rf "$src" && wrapper "$src" real-tools/pulumi-resource-kubernetes
    (cd "$src"
     go_or_refused "kubernetes provider" go get "$K8S_PROVIDER_MODULE@$K8S_PROVIDER_COMMIT" "github.com/pulumi/pulumi-kubernetes/sdk/v4@$K8S_PROVIDER_SDK"
     local mod; mod="$(module_dir "$K8S_PROVIDER_MODULE@$K8S_PROVIDER_COMMIT")"
     # The schema and mapping are embedded as the upstream generate.go writes them (gitignored upstream).
     python3 - "$mod/cmd/pulumi-resource-kubernetes" "$K8S_PLUGIN_VERSION" <<'EOF'
import json, sys
d, version = sys.argv[1], sys.argv[2]
schema = json.load(open(f"{d}/schema.json"))
schema["version"] = version
json.dump(schema, open("schema-embed.json", "w"), separators=(",", ":"))
json.dump(json.load(open(f"{d}/terraform-mapping.json")), open("terraform-mapping-embed.json", "w"), separators=(",", ":"))
EOF
     cat >main.go <<'EOF'
package main

import (
	_ "embed"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

//go:embed schema-embed.json
var pulumiSchema []byte

//go:embed terraform-mapping-embed.json
var terraformMapping []byte

func main() {
	provider.Serve("kubernetes", version.Version, pulumiSchema, terraformMapping)
}
EOF
     go_or_refused "kubernetes provider modules" go mod tidy
     go_or_refused "kubernetes provider" go build -trimpath \
        -ldflags "-s -w -X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=$K8S_PLUGIN_VERSION" \
        -o "$out/pulumi-resource-kubernetes" .)
}

build_random_provider() {
    local out="$1" src="$TOOLS/src/pulumi-random-$RANDOM_PLUGIN_VERSION"
    rm -rf "$src" && mkdir -p "$src" && cp -r "$SHARED/upstream/pulumi-random/provider/." "$src/"
    chmod -R u+w "$src"
    (cd "$src/cmd/pulumi-resource-random"
     python3 - "$RANDOM_PLUGIN_VERSION" <<'EOF'
import json, sys
schema = json.load(open("schema.json"))
schema["version"] = sys.argv[1]
json.dump(schema, open("schema-embed.json", "w"), separators=(",", ":"))
EOF
     cd "$src"
     go_or_refused "random provider" go build -trimpath \
        -ldflags "-s -w -X github.com/pulumi/pulumi-random/provider/v4/pkg/version.Version=$RANDOM_PLUGIN_VERSION" \
        -o "$out/pulumi-resource-random" ./cmd/pulumi-resource-random)
}

build_kubernetes() {
    local out="$1" src="$TOOLS/src/kubernetes-$KUBERNETES_VERSION"
    rm -rf "$src" && wrapper "$src" real-tools/kubernetes
    (cd "$src"
     go_or_refused "kubernetes $KUBERNETES_VERSION" go mod download -json "k8s.io/kubernetes@$KUBERNETES_VERSION" >/dev/null
     local mod; mod="$(module_dir "k8s.io/kubernetes@$KUBERNETES_VERSION")"
     # k8s.io/kubernetes requires its staging modules as v0.0.0 replaced by ./staging: map each to its tag.
     local staging="v0${KUBERNETES_VERSION#v1}"
     grep -oE '^\s*k8s\.io/[a-z0-9-]+ => \./staging/src/k8s\.io/[a-z0-9-]+' "$mod/go.mod" | awk '{print $1}' | while read -r m; do
         go mod edit -replace "$m=$m@$staging"
     done
     go mod edit -require "k8s.io/kubernetes@$KUBERNETES_VERSION"
     go mod edit -godebug default=go1.24
     cat >tools.go <<'EOF'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
EOF
     go_or_refused "kubernetes modules" go mod tidy
     local v=k8s.io/component-base/version
     local ld="-s -w -X $v.gitVersion=$KUBERNETES_VERSION -X $v.gitMajor=1 -X $v.gitMinor=$(echo "$KUBERNETES_VERSION" | cut -d. -f2) -X $v.gitTreeState=clean -X $v.buildDate=1970-01-01T00:00:00Z"
     ld="$ld -X k8s.io/client-go/pkg/version.gitVersion=$KUBERNETES_VERSION"
     go_or_refused "kube-apiserver, kube-controller-manager, kube-scheduler, kubectl" go build -trimpath -ldflags "$ld" -o "$out/" \
        k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
        k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl)
}

build_etcd() {
    local out="$1" src="$TOOLS/src/etcd-$ETCD_VERSION"
    rm -rf "$src" && wrapper "$src" real-tools/etcd
    (cd "$src"
     go_or_refused "etcd $ETCD_VERSION" go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
     go_or_refused "etcd" go build -trimpath -ldflags "-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3)
}

build_kwok() {
    local out="$1" src="$TOOLS/src/kwok-$KWOK_VERSION"
    rm -rf "$src" && wrapper "$src" real-tools/kwok
    (cd "$src"
     go_or_refused "kwok $KWOK_VERSION" go get "sigs.k8s.io/kwok@$KWOK_VERSION"
     go_or_refused "kwok" go build -trimpath -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION" -o "$out/" \
        sigs.k8s.io/kwok/cmd/kwok sigs.k8s.io/kwok/cmd/kwokctl)
}

# bindir: one directory of links to every tool (what the tests put on PATH), printed on stdout.
bindir() {
    local bin="$TOOLS/bin-$PULUMI_VERSION-$KUBERNETES_VERSION"
    mkdir -p "$bin"
    local d
    for d in "$TOOLS/pulumi-$PULUMI_VERSION" "$TOOLS/kubernetes-$KUBERNETES_VERSION" "$TOOLS/etcd-$ETCD_VERSION" \
             "$TOOLS/kwok-$KWOK_VERSION" "$TOOLS/pulumi-kubernetes-$K8S_PLUGIN_VERSION" "$TOOLS/pulumi-random-$RANDOM_PLUGIN_VERSION"; do
        stamp_ok "$d" || { echo "build.sh: $d is not built (make real-tools)" >&2; return 1; }
        ln -sf "$d"/* "$bin/"
    done
    echo "$bin"
}

step() {
    case "$1" in
        pulumi) timed "$TOOLS/pulumi-$PULUMI_VERSION" build_pulumi ;;
        kubernetes-provider) timed "$TOOLS/pulumi-kubernetes-$K8S_PLUGIN_VERSION" build_kubernetes_provider ;;
        random-provider) timed "$TOOLS/pulumi-random-$RANDOM_PLUGIN_VERSION" build_random_provider ;;
        kubernetes) timed "$TOOLS/kubernetes-$KUBERNETES_VERSION" build_kubernetes ;;
        etcd) timed "$TOOLS/etcd-$ETCD_VERSION" build_etcd ;;
        kwok) timed "$TOOLS/kwok-$KWOK_VERSION" build_kwok ;;
        bindir) bindir ;;
        *) echo "build.sh: unknown tool '$1' (allowed: all pulumi kubernetes-provider random-provider kubernetes etcd kwok bindir)" >&2; return 2 ;;
    esac
}

if [ "${1:-all}" = all ]; then
    for t in kwok etcd random-provider pulumi kubernetes kubernetes-provider; do step "$t"; done
    bindir >/dev/null
else
    step "$1"
fi
