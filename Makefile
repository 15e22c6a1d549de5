# Two commands do all set-up: `make run` (the workbench on the demo OpenClaw home) and `make test`.
# Both create .venv and install the project into it on first use. `make check` is the quick loop
# while developing (under a minute): lint, types, and the unit tests of the pure parts, which load
# no model. `make test-fast`: lint, types and every test except the browser, UMAP, notebook, long
# evaluation, soak and full-tier ones (pytest markers, declared in pyproject.toml). check and
# test-fast spread the tests over the cores with pytest-xdist (PYTEST_PAR; `make test-fast
# PYTEST_PAR=` runs them in one process): a worker per core and one more (tests/conftest.py), each
# test file on one worker (`--dist loadfile`: its module fixtures are built once; loadgroup's
# per-file marks are lost under pytest 9, which sent a file's tests to both workers, each building
# the file's index), the dearest files first. `make test` (CI) stays in one process until a whole parallel run of it has
# been seen green.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

PYTEST_PAR ?= -n auto --dist loadfile
FAST_MARKERS := not browser and not umap and not notebook and not longeval and not soak and not full
# `make check`'s tests: chunking (with its goldens), fusion (MMR, decay, date pool, tail order), query
# building (the reference's keyword goldens), config and its doors, metrics, qmd's result
# parsing, the structure rules, and one real index -> search -> get round trip on the small demo
# with the keyword-only provider (the store, sync, keyword leg, fusion and reading); none embeds
# with a model
CHECK_TESTS := tests/test_round_trip.py tests/test_architecture.py tests/test_chunking.py tests/test_config.py \
	tests/test_evaluation.py tests/test_fusion_date_pool.py tests/test_vectors_mmr.py \
	tests/test_topk.py tests/test_qmd_results.py tests/test_fusion_tail.py \
	tests/test_reference_goldens.py::test_fallback_keywords_are_the_engines

.PHONY: run qmd test test-fast check lint typecheck bench clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -c constraints.txt -e '.[dev]'
	touch $(STAMP)

# Nothing is downloaded at run time: the qmd backend's node and qmd come from `make qmd`, once.
run: $(STAMP)
	MEMORY_WORKBENCH_OPENCLAW_HOME=$(CURDIR)/examples/demo-home \
		$(VENV)/bin/streamlit run app.py --server.headless true

qmd:
	bash scripts/install-node-tools.sh qmd  # node 24 + qmd (the qmd backend) in .tools/

test: $(STAMP)
	-bash scripts/install-node-tools.sh  # node 24, MCP Inspector, qmd in .tools/ (skipped without npm)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(PY) -m pytest --nbmake tests notebooks

lint: $(STAMP)
	$(VENV)/bin/ruff check .

typecheck: $(STAMP)  # mypy on memory_core/ and workbench/ ([tool.mypy] in pyproject.toml)
	$(VENV)/bin/mypy

check: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(PY) -m pytest -q $(PYTEST_PAR) $(CHECK_TESTS)

test-fast: $(STAMP)
	-bash scripts/install-node-tools.sh  # node 24, MCP Inspector, qmd in .tools/ (skipped without npm)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(PY) -m pytest $(PYTEST_PAR) tests -m "$(FAST_MARKERS)"

bench: $(STAMP)
	for b in benchmarks/bench_*.py; do $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) examples/demo-workspace/.memory examples/demo-home/workspace/.memory
