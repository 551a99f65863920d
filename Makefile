# Quick start: `make demo` (set-up + the whole pipeline on the embedded demo) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CORES ?= 2
SNAKEMAKE := $(BIN)/snakemake --cores $(CORES)

.PHONY: setup demo run report test lint dry-run-paper clean-demo manifest verify

# The venv is (re)built when missing or when the dependency files change.  The constraints file
# keeps the CPU torch of CPU-only machines (see README "Set-up" for GPU machines).
$(VENV)/.installed: pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[test]'
	touch $@

# pip byte-compiles the libraries it installs, but not this editable package: where PYTHONDONTWRITEBYTECODE
# is set (as on some CI and cluster images) every job would compile the csfbench modules it imports again
# (0.3-1 s a job).  compileall only rewrites what changed since its last run.
setup: $(VENV)/.installed
	$(BIN)/python -m compileall -q src

# the demo ends with its self-contained HTML report; the last line printed is the report's path.  Like `make run`
# it validates the config first (a YAML error named by file, line and column; the checkout is the demo config's
# run folder: its .csfbench-run.json names config/config.yaml)
demo: setup
	$(BIN)/csfbench validate config/config.yaml --run-dir .
	$(SNAKEMAKE) --configfile config/config.yaml
	$(BIN)/csfbench summary --results results
	$(BIN)/snakemake --configfile config/config.yaml --report results/report.html
	@echo "$(CURDIR)/results/report.html"

# A run of your own config in a folder of its own (docs/own-data.md): `make run CONFIG=my.yaml` writes
# runs/my/results/ (report included; RESULTS= another folder) and never touches the demo's results/;
# `make report`, `make manifest` and `make verify` with the same CONFIG= (and RESULTS=) follow that run.
# The demo config keeps the checkout's results/ (RESULTS = .).  Before the DAG, `csfbench validate --run-dir`
# refuses a RESULTS folder that holds other files and is not this config's run folder, and marks a new one
# (RESULTS/.csfbench-run.json; docs/reproducibility.md, "Config validation and run folders").
CONFIG ?= config/config.yaml
ifeq ($(abspath $(CONFIG)),$(CURDIR)/config/config.yaml)
RESULTS ?= .
else
RESULTS ?= runs/$(basename $(notdir $(CONFIG)))
endif
RUN_SNAKEMAKE = $(BIN)/snakemake -s $(CURDIR)/Snakefile --directory $(RESULTS) --configfile $(abspath $(CONFIG))

run: setup
	$(BIN)/csfbench validate $(abspath $(CONFIG)) --run-dir $(RESULTS)
	$(RUN_SNAKEMAKE) --cores $(CORES)
	$(BIN)/csfbench summary --results $(RESULTS)/results
	$(RUN_SNAKEMAKE) --report results/report.html
	@echo "$(abspath $(RESULTS))/results/report.html"

report: setup
	$(RUN_SNAKEMAKE) --report results/report.html
	@echo "$(abspath $(RESULTS))/results/report.html"

# the suite on CORES worker processes (pytest-xdist): a test file is a unit of work, the files sharing one workflow
# run are one unit (tests/conftest.py), the end-to-end files first; `pytest` alone runs it in one process
test: setup
	$(BIN)/python -m pytest -n $(CORES) --dist loadgroup --no-loadscope-reorder

lint: setup
	$(BIN)/snakemake --lint --configfile tests/config/micro.yaml

# Artifact reproduction: `make manifest` records sha256 content hashes of results/ with their provenance
# (config hash, git commit, package versions); `make verify` recomputes them and names every file that
# differs (MANIFEST= a manifest from another run, e.g. a colleague's).
MANIFEST ?= $(RESULTS)/results/manifest.json

manifest: setup
	$(BIN)/csfbench manifest write --results $(RESULTS)/results --config $(CONFIG) --output $(MANIFEST)

verify: setup
	$(BIN)/csfbench manifest verify --results $(RESULTS)/results --config $(CONFIG) --manifest $(MANIFEST)

dry-run-paper: setup
	$(BIN)/snakemake -n --quiet rules --configfile config/paper.yaml

# everything the workflow wrote (results/README.md is tracked and kept)
clean-demo:
	find results -mindepth 1 -maxdepth 1 ! -name README.md -exec rm -rf {} +
	rm -rf .snakemake
