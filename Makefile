# Two commands on a fresh machine: `make run` (install + start the workbench), `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PORT ?= 8501
# Where torch comes from: PyTorch's CPU wheels by default (no GPU needed, ~10x smaller than the
# CUDA build). For CUDA: `make install TORCH_INDEX=https://download.pytorch.org/whl/cu128` (or
# TORCH_INDEX= for PyPI's default build).
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu

.PHONY: install run test lint notebooks bench clean-runs

# The stamp is rebuilt when the pinned requirements or the package metadata change.
$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(if $(TORCH_INDEX),$(PY) -m pip install -q --retries 1 --timeout 20 --index-url $(TORCH_INDEX) torch==2.13.0 \
	  || echo "note: $(TORCH_INDEX) not reachable; torch comes from the default index",)
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q -e .
	bash scripts/install_system.sh
	touch $(STAMP)

install: $(STAMP)

# Class mode: `make run CLASS=class.json` (docs/class-mode.md) signs people in and binds every address
# (ADDRESS=0.0.0.0) so the class can reach it; otherwise the workbench listens on this machine only.
CLASS ?=
ADDRESS ?= $(if $(CLASS),0.0.0.0,127.0.0.1)

# In class mode the web server and the class's training service (the queue's Ray) are two processes
# under one supervisor (`python -m dpcore class serve`): Ray dying restarts the service, never a page.
run: install
ifneq ($(CLASS),)
	$(PY) -m dpcore class check --file "$(CLASS)"
	$(PY) -m dpcore class serve --file "$(CLASS)" --address $(ADDRESS) --port $(PORT)
else
	$(PY) -m streamlit run app.py --server.headless true \
	  --server.address $(ADDRESS) --server.port $(PORT) --browser.gatherUsageStats false
endif

lint: install
	$(PY) -m ruff check .
	$(PY) -m mypy  # the privacy core's, the run store's and the jobs' types ([tool.mypy] in pyproject.toml)

# Two workers (TEST_WORKERS=1 for one): the browser, server and Ray tests spend most of their time
# waiting on another process, so two share two cores well; the tests on one local Ray stay on one
# worker (the `ray` group, tests/conftest.py).
TEST_WORKERS ?= 2
test: lint
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup

# The build step executes a notebook again only when its source in notebooks/_build/ changed (the
# outputs are committed); then JupyterLab opens them.
notebooks: install
	$(PY) notebooks/_build/build.py
	$(PY) -m jupyter lab notebooks/ --ServerApp.ip=127.0.0.1 --allow-root  # root in containers: jupyter refuses without it

bench: install
	$(PY) bench/dpsgd.py
