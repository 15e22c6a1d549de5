# Two commands do all set-up: `make run` (the workbench on the demo workspace) and `make test`.
# Both create .venv and install the project into it on first use. `make test-fast` is the quick
# loop while developing: lint and every test except the browser, UMAP, notebook and long
# evaluation ones (pytest markers, declared in pyproject.toml).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

FAST_MARKERS := not browser and not umap and not notebook and not longeval

.PHONY: run test test-fast lint bench clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -c constraints.txt -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	-bash scripts/install-node-tools.sh qmd  # node 24 + qmd (the qmd backend) in .tools/ (skipped without npm)
	$(VENV)/bin/streamlit run app.py --server.headless true

test: $(STAMP)
	-bash scripts/install-node-tools.sh  # node 24, MCP Inspector, qmd in .tools/ (skipped without npm)
	$(VENV)/bin/ruff check .
	$(PY) -m pytest --nbmake tests notebooks

lint: $(STAMP)
	$(VENV)/bin/ruff check .

test-fast: $(STAMP)
	-bash scripts/install-node-tools.sh  # node 24, MCP Inspector, qmd in .tools/ (skipped without npm)
	$(VENV)/bin/ruff check .
	$(PY) -m pytest tests -m "$(FAST_MARKERS)"

bench: $(STAMP)
	for b in benchmarks/bench_*.py; do $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) examples/demo-workspace/.memory
