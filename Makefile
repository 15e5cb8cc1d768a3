# windowkit: `make demo` runs the demo pipeline, `make test` runs the whole suite.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
STAMP_DEV := $(VENV)/.installed-dev
OUT ?= out/demo

.PHONY: demo test lint bench java clean

java:
	@command -v java >/dev/null 2>&1 || { echo "windowkit needs Java 17 or newer (Spark 4): install a JDK 17, e.g. 'apt-get install openjdk-17-jre-headless', and put java on PATH."; exit 1; }
	@v=$$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1); \
	  if [ -z "$$v" ] || [ "$$v" -lt 17 ]; then echo "windowkit needs Java 17 or newer (Spark 4); found Java '$$v': install a JDK 17 and put it first on PATH."; exit 1; fi

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install -q -e .
	touch $@

$(STAMP_DEV): pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install -q -e '.[dev,connect]'
	touch $@ $(STAMP)

demo: java $(STAMP)
	$(VENV)/bin/windowkit demo --output $(OUT)

test: java $(STAMP_DEV)
	$(PY) -m pytest -q
	$(VENV)/bin/ruff check .

lint: $(STAMP_DEV)
	$(VENV)/bin/ruff check .

bench: java $(STAMP_DEV)
	$(PY) bench/frames.py

clean:
	rm -rf $(VENV) out spark-warehouse
