# Each target makes its own .venv on first use. torch/torchvision are pinned to the builds on this machine's disk.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
DEMO_DIR ?= demo-output

.PHONY: setup demo test test-notebook test-browser check bench clean wheel-check

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q "torch==2.14.1" "torchvision==0.29.1"
	$(PIP) install -q -e ".[all,harness,dev]"
	touch $@

demo: setup
	$(VENV)/bin/culturekb demo --out $(DEMO_DIR)

test: setup
	$(PY) -m pytest -q

# the notebook as a new user runs it, building the demo KB inside it (2-3 minutes; deselected from `make test`)
test-notebook: setup
	$(PY) -m pytest -q -m notebook_build tests/test_notebook.py

# the review page in a real headless browser (not part of `make test`): Debian's Chromium and chromedriver, Selenium
# from PyPI (it is given the driver's path, so it downloads nothing); screenshots in benchmarks/results/review_page/
test-browser: setup
	command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver)
	$(PY) -c "import selenium" 2>/dev/null || $(PIP) install -q "selenium>=4.20"
	CULTUREKB_BROWSER_TESTS=1 $(PY) -m pytest -q tests/browser

check: setup
	$(VENV)/bin/ruff check culturekb tests benchmarks
	$(VENV)/bin/mypy

bench: setup
	$(PY) benchmarks/run_all.py

# build the wheel, install it into a fresh venv, smoke-test it (culturekb --version, build + lookup on the sample)
wheel-check: setup
	$(PIP) install -q build
	PYTHON=$(PY) bash scripts/wheel_smoke.sh

clean:
	rm -rf $(VENV) $(DEMO_DIR) .pytest_cache .mypy_cache .ruff_cache
