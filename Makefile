# t9k-operator: run `make help` for the targets.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
CLUSTER ?= t9k
IMG ?= t9k-operator:dev
KUBECONFIG_PATH = $(shell $(PYTHON) -m hack.cluster kubeconfig --name $(CLUSTER))

.PHONY: help venv console-assets lock lint format test test-deps binaries binaries-core unit integration cluster cluster-down run demo manifests deploy undeploy install uninstall image docker-build docker-push rootfs bench bench-memory clean

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

# The console's page scripts: frontend/src/<page>.js bundled by esbuild into
# t9k_operator/console/static/<page>.js (and the charts' uPlot into chart.js
# and chart.css; all git-ignored), with the npm packages
# exactly as frontend/package-lock.json locks them. They ship in the package
# (the wheel, the image): the console loads nothing from elsewhere at run time.
# Built again only when a source or the lock is newer than the scripts.
NPM_INSTALLED := frontend/node_modules/.package-lock.json
CONSOLE_SOURCES := $(wildcard frontend/src/*.js frontend/src/lib/*.js)
CONSOLE_ASSETS := $(patsubst frontend/src/%.js,t9k_operator/console/static/%.js,$(wildcard frontend/src/*.js)) \
	t9k_operator/console/static/chart.css

$(NPM_INSTALLED): frontend/package.json frontend/package-lock.json
	cd frontend && npm ci --no-audit --no-fund
	touch $@

$(CONSOLE_ASSETS) &: $(NPM_INSTALLED) $(CONSOLE_SOURCES)
	cd frontend && npm run --silent build
	touch $(CONSOLE_ASSETS)

console-assets: $(CONSOLE_ASSETS) ## the console's page scripts, bundled from frontend/ with the locked npm packages (needs node and npm)

# The environment is exactly requirements/dev.txt (hash-checked), then the
# operator itself, editable, built with the locked setuptools (whose build
# wants the console's scripts built).
$(STAMP): pyproject.toml requirements/dev.txt | $(CONSOLE_ASSETS)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --require-hashes -r requirements/dev.txt
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	$(PY) -m pip check
	touch $(STAMP)

venv: $(STAMP) $(CONSOLE_ASSETS) ## create .venv with the operator and its test and lint tools, as locked in requirements/, and the console's scripts

lock: $(STAMP) ## re-resolve requirements/*.txt from pyproject.toml's ranges (UPGRADE=1: the newest versions allowed)
	$(PY) -m hack.release.lock$(if $(UPGRADE), --upgrade)

lint: $(STAMP) ## ruff, mypy, the import-layering contracts, and the lock files against pyproject.toml
	$(VENV)/bin/ruff check t9k_operator tests hack
	$(VENV)/bin/ruff format --check t9k_operator tests hack
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports
	$(PY) -m hack.release.lock --check

format: $(STAMP) ## apply ruff's formatting and safe fixes
	$(VENV)/bin/ruff check --fix t9k_operator tests hack
	$(VENV)/bin/ruff format t9k_operator tests hack

# The integration tests run on TEST_WORKERS pytest-xdist workers, each against
# a local cluster of its own (t9k-test-gw0, ...): a test mostly waits on its
# cluster, so two workers take about half the time on two cores.
TEST_WORKERS ?= 2
PYTEST_INTEGRATION = $(VENV)/bin/pytest $(if $(filter-out 0 1,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadgroup) tests/integration
# The unit tests, on as many workers (each process of its own: nothing shared).
PYTEST_UNIT = $(VENV)/bin/pytest $(if $(filter-out 0 1,$(TEST_WORKERS)),-n $(TEST_WORKERS)) tests/unit

test: lint $(CONSOLE_ASSETS) test-deps binaries rootfs ## lint, unit tests, then integration tests on local clusters it starts (TEST_WORKERS=2)
	$(PYTEST_UNIT)
	$(PYTEST_INTEGRATION)

test-deps: ## system packages the tests need (openssh-server, pdsh for launch-path tests; prometheus for the monitoring tests; debootstrap, buildah for the image; chromium for the console's browser tests), and the frameworks the training tests import (tensorflow-cpu; boto3 for the TensorBoard S3 test)
	bash hack/ensure-test-deps.sh
	/usr/bin/python3 hack/ensure-frameworks.py

binaries: ## the local cluster's binaries, gang schedulers, Kueue, Helm, kustomize and SeaweedFS (an S3 server): cached, else built from Go modules (about 25 min cold)
	$(PYTHON) -m hack.cluster binaries

binaries-core: ## the control plane's binaries alone (etcd, Kubernetes, KWOK): what the demo and a plain cluster use; the rest is built when first used
	$(PYTHON) -m hack.cluster binaries --gang none --no-kueue --no-tools

unit: $(STAMP) $(CONSOLE_ASSETS) ## unit tests only (no cluster)
	$(PYTEST_UNIT)

integration: $(STAMP) $(CONSOLE_ASSETS) test-deps binaries rootfs ## integration tests only (TEST_WORKERS=1: one cluster, in order)
	$(PYTEST_INTEGRATION)

cluster: binaries-core ## start the local cluster (GANG=volcano,coscheduling: with gang schedulers; KUEUE=1: with Kueue; CLUSTERS=3: and two MultiKueue workers, docs/scheduling.md)
	$(PYTHON) -m hack.cluster up --name $(CLUSTER)$(if $(GANG), --gang $(GANG))$(if $(KUEUE), --kueue)
	$(if $(filter 3,$(CLUSTERS)),$(PYTHON) -m hack.cluster multikueue --name $(CLUSTER))

cluster-down: ## stop the local cluster (and its MultiKueue workers) and remove its state
	$(PYTHON) -m hack.cluster down --name $(CLUSTER)
	$(PYTHON) -m hack.cluster down --name $(CLUSTER)-worker-1 >/dev/null 2>&1
	$(PYTHON) -m hack.cluster down --name $(CLUSTER)-worker-2 >/dev/null 2>&1

run: $(STAMP) $(CONSOLE_ASSETS) ## run the operator against the current kubeconfig context
	$(PY) -m t9k_operator --metrics-bind-address 127.0.0.1:8080 --health-probe-bind-address 127.0.0.1:8081

# The virtualenv (network) and the control plane's build (CPU) side by side.
demo: ## local cluster + CRDs + operator + sample jobs (Ctrl-C stops everything)
	$(MAKE) --no-print-directory -j2 venv binaries-core
	$(PY) -m hack.demo --name $(CLUSTER)

manifests: $(STAMP) binaries ## refresh the pinned Kubernetes pod schema; regenerate the CRDs, the ClusterRole, kustomize's overlays, the Helm chart and deploy/install.yaml
	$(PY) -m hack.generate.openapi refresh
	$(PY) -m hack.generate.crds
	$(PY) -m hack.generate.rbac
	$(PY) -m hack.generate.install

IMG ?= ghcr.io/t9k-operator/t9k-operator:0.1.0
OVERLAY ?= deploy/cluster-wide

deploy: ## install into the current kubeconfig's cluster with image IMG (kustomize OVERLAY, server-side apply)
	$(PYTHON) -m hack.release.deploy apply --image $(IMG) --overlay $(OVERLAY)$(if $(KUBECTL), --kubectl $(KUBECTL))

undeploy: ## remove what deploy installed, except the CRDs (so the jobs and their pods) and PriorityClasses
	$(PYTHON) -m hack.release.deploy delete --overlay $(OVERLAY)$(if $(KUBECTL), --kubectl $(KUBECTL))

bench: $(STAMP) $(CONSOLE_ASSETS) binaries ## job starts on fresh local clusters (BENCH_ARGS="--sizes 200x4" to choose), the progress endpoint (PROGRESS_ARGS), then the operator's reconciles beside 10,000 reporting ranks (BESIDE_ARGS), and the notifications' deliverer with 10,000 jobs ending within a minute and one slow endpoint (NOTIFY_ARGS), and MultiKueue's dispatch of 1,000 jobs to two workers (MK_ARGS), and the console's Jobs page with 5,000 jobs in headless Chromium and its memory with 10,000 jobs and 20 open pages (CONSOLE_ARGS) (docs/benchmarks.md)
	$(PY) -m hack.bench.job_start $(BENCH_ARGS)
	$(PY) -m hack.bench.progress $(PROGRESS_ARGS)
	$(PY) -m hack.bench.progress_beside $(BESIDE_ARGS)
	$(PY) -m hack.bench.notifications $(NOTIFY_ARGS)
	$(PY) -m hack.bench.multikueue $(MK_ARGS)
	$(PY) -m hack.bench.console $(CONSOLE_ARGS)

bench-memory: $(STAMP) binaries ## informer store memory per cached pod (docs/benchmarks.md)
	$(PY) -m hack.bench.store_memory

image: $(CONSOLE_ASSETS) ## build the operator image IMG (default t9k-operator:dev) with docker, podman or buildah, whichever works here; BASE=debootstrap makes its base from Debian's packages (no registry)
	bash hack/release/image.sh $(IMG)

# kubebuilder's names, for those who know an operator's Makefile by them.
docker-build: image ## kubebuilder's name for `make image` (IMG=...)

docker-push: ## push IMG with the builder `make image` used (PUSH_DEST=oci:DIR or another transport podman/buildah take)
	bash hack/release/image.sh --push $(IMG) $(PUSH_DEST)

install: ## install the CRDs alone into the current kubeconfig's cluster (server-side apply)
	$(PYTHON) -m hack.release.deploy install$(if $(KUBECTL), --kubectl $(KUBECTL))

uninstall: ## delete the CRDs from the current kubeconfig's cluster: every job, TensorBoard and their pods go with them
	$(PYTHON) -m hack.release.deploy uninstall$(if $(KUBECTL), --kubectl $(KUBECTL))

rootfs: $(CONSOLE_ASSETS) ## the image's root filesystem from Debian's packages, by the Dockerfile (cached; the in-cluster tests run it)
	$(PYTHON) -m hack.release.rootfs build

clean: ## remove the virtualenv, the console's npm packages and built scripts, and caches in the work tree
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache frontend/node_modules $(CONSOLE_ASSETS)
