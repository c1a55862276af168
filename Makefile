# Two commands on a fresh machine: `make report` and `make test`. Each creates .venv when missing.
# The interpreter .venv is made from. Debian's /usr/bin/python3.11 is built with profile-guided and
# link-time optimisation and linked statically; pyenv's default build (first on PATH on our machines) is
# neither, and runs our pure-Python code about 20% slower (0.80 in interleaved pairs of a loop benchmark)
# and one report 0.91x (docs/performance.md, "The interpreter"). Taken when it can make a venv with pip;
# otherwise python3.11, then python3, from PATH. `make PYTHON=...` chooses another.
SYSTEM_PYTHON := $(shell /usr/bin/python3.11 -c 'import ensurepip, venv' >/dev/null 2>&1 && echo /usr/bin/python3.11)
PYTHON ?= $(or $(SYSTEM_PYTHON),$(shell command -v python3.11 || command -v python3))
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
PORT   ?= 8866
JOBS   ?=
TEST_JOBS ?= auto

# Python keeps its bytecode caches (__pycache__/, gitignored) in every target, even where the shell sets
# PYTHONDONTWRITEBYTECODE: without them every process recompiles the package (about 0.5 s of CPU for a
# report) and pytest rewrites every test module's assertions again in each worker (collection 19 s of
# CPU per worker instead of 8 s on a 2-core machine, 2 December 2026).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: report test lab app bench clean-venv schema docs

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[notebooks,test,docs]'
	@touch $(STAMP)

report: $(STAMP)  ## render every shipped scenario into reports/ (HTML + summary.json + index) and every portfolio's plan
	@rc=0; $(BIN)/python -m workbook report --out reports $(if $(JOBS),--jobs $(JOBS)) || rc=$$?; \
	for f in data/portfolios/*.yaml; do n=$$(basename $$f .yaml); \
	  $(BIN)/python -m workbook plan $$f --html reports/plans/$$n.html > /dev/null || rc=2; done; \
	$(BIN)/python -c "from workbook.report.batch import write_index; write_index('reports')"; exit $$rc

# One pytest for the package's tests and the notebooks (nbval: each notebook's cells in order, in one
# kernel), across the cores: whole files per worker (--dist loadfile, for their module fixtures), longest
# files first (tests/conftest.py RUN_FIRST; --no-loadscope-reorder keeps that order). The docs site is
# built (strict) into site/ by tests/test_docs.py's strict-build test (WORKBOOK_DOCS_SITE_DIR): the same
# build as `make docs`, made once; its failure fails `make test`.
test: $(STAMP)  ## run every test: package, notebooks (nbval), report path, browser, the docs site (strict, into site/); across the cores (pytest-xdist, one file per worker)
	WORKBOOK_DOCS_SITE_DIR=$(CURDIR)/site $(BIN)/python -m pytest -n $(TEST_JOBS) --dist loadfile \
	  --no-loadscope-reorder --nbval-lax --nbval-current-env -p no:randomly tests notebooks

docs: $(STAMP)  ## the documentation site into site/, offline; --strict: a broken link or anchor fails the build (never with --quiet: it hides the warnings strict counts)
	PYTHONPATH=$(CURDIR) $(BIN)/python -m mkdocs build --strict

lab: $(STAMP)  ## JupyterLab for analysts
	$(BIN)/jupyter lab --ip 127.0.0.1 $(if $(filter 0,$(shell id -u)),--allow-root) notebooks

app: $(STAMP)  ## the stakeholder app (Voila) on 127.0.0.1:$(PORT)
	$(BIN)/python -m workbook.app --port $(PORT)

bench: $(STAMP)  ## print speed figures
	$(BIN)/python benchmarks/run.py

schema: $(STAMP)
	$(BIN)/python -m workbook schema > data/scenario.schema.json

clean-venv:
	rm -rf $(VENV)
