# Two commands on a fresh machine: `make run` (install + start the workbench), `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PORT ?= 8501

.PHONY: install run test bench clean-runs

$(STAMP): requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	bash scripts/install_system.sh
	touch $(STAMP)

install: $(STAMP)

run: install
	$(PY) -m streamlit run app.py --server.headless true --server.address 127.0.0.1 \
	  --server.port $(PORT) --browser.gatherUsageStats false

test: install
	$(PY) -m pytest -q

bench: install
	$(PY) bench/dpsgd.py
