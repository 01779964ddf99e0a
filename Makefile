# benchmap: two commands do all set-up on a fresh clone.
#   make run   create .venv, install, materialize every asset into data/warehouse/benchmap.duckdb
#   make test  create .venv, install (with test extras, the local LLM and headless Chromium), run the test suite
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export BENCHMAP_MIRROR ?= ../shared/data
export DAGSTER_HOME := $(CURDIR)
# two workers on the 2-core machines (pytest-xdist); loadgroup starts the two long lanes (the tests sharing the
# full_pipeline fixture, the local llama.cpp tests: tests/conftest.py's xdist groups) on different workers and
# fills in the rest. The run ends with the slowest tests and each worker's wall/CPU seconds. PYTEST_ARGS= runs in
# one process.
PYTEST_ARGS ?= -n 2 --dist loadgroup --durations=25

.PHONY: run test install install-dev install-llm browser dev lint bench clean-warehouse lock

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# every install takes the versions the tests passed with (requirements.lock; `make lock` moves them on)
LOCK := -c requirements.lock
$(VENV)/.installed: pyproject.toml requirements.lock | $(BIN)/python
	$(BIN)/pip install --quiet $(LOCK) -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml requirements.lock $(VENV)/.installed
	$(BIN)/pip install --quiet $(LOCK) -e '.[dev]'
	touch $@

# llama.cpp built for generic AVX2, without AVX-512/AMX: a native build on this workplace's CPUs (AMX) segfaults
# on the first evaluated token. --no-cache-dir: never reuse a natively built wheel from pip's cache.
# LLAVA_BUILD=OFF: no multimodal library (mtmd); the text-only server never loads it, and CI compiles less.
LLAMA_CMAKE_ARGS = -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF \
	-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DGGML_OPENMP=OFF -DLLAVA_BUILD=OFF
$(VENV)/.installed-llm: pyproject.toml requirements.lock $(VENV)/.installed
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=2 $(BIN)/pip install --quiet --no-cache-dir \
		$(LOCK) -e '.[local-llm]'
	touch $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev
install-llm: $(VENV)/.installed-llm

# Headless Chromium + its driver from Debian, for the coverage-map browser test.
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; }

run: install
	$(BIN)/python -m pipelines.run_all

test: install-dev install-llm browser
	$(BIN)/python -m pytest $(PYTEST_ARGS)

dev: install-dev
	$(BIN)/dagster dev

lint: install-dev
	$(BIN)/ruff check .

bench: install
	@for b in cold warm new_benchmark labeler_throughput scale; do echo "== bench/$$b.py" >&2; $(BIN)/python bench/$$b.py; done

clean-warehouse:
	rm -f data/warehouse/benchmap.duckdb data/warehouse/benchmap.duckdb.wal

# requirements.lock anew: the newest versions pyproject.toml allows, resolved in a throw-away venv without the lock
# (~8 minutes: llama-cpp-python compiles); then run `make test` before committing it
lock:
	rm -rf .venv-lock && $(PYTHON) -m venv .venv-lock && .venv-lock/bin/python -m pip install --quiet --upgrade pip
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=2 .venv-lock/bin/pip install --quiet --no-cache-dir \
		-e '.[dev,local-llm]'
	.venv-lock/bin/pip freeze --exclude-editable | grep -v '^#' > requirements.lock
	rm -rf .venv-lock
