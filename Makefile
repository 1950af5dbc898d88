# Two commands on a fresh machine: `make render STACK=prod` and `make test`.
# Each creates the virtualenv it needs (.venv, the same one Pulumi.yaml points at).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STACK ?= prod
OUT ?= build/$(STACK)

.PHONY: render test bench lint fetch-upstream clean examples

$(VENV)/.installed: pyproject.toml requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

render: $(VENV)/.installed  ## offline render of one stack (mock engine; not a cloud preview)
	$(PY) -m infra.render --stack $(STACK) --out $(OUT)

test: $(VENV)/.installed  ## unit, component, config, schema and render tests
	$(PY) -m pytest

bench: $(VENV)/.installed  ## wall times that targets are judged by (printed, not asserted)
	$(PY) -m scripts.bench

examples: $(VENV)/.installed  ## the seed example workloads + NCCL health checks into build/examples
	EKSTRAIN=$(VENV)/bin/ekstrain examples/render-all.sh build/examples

fetch-upstream:  ## fetch the pinned upstream CRDs and chart values into .upstream/
	scripts/fetch-upstream.sh .upstream

clean:
	rm -rf build .pytest_cache
