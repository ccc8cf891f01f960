# The README's two commands are `make demo` and `make test`; both create .venv themselves.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
export UV_PYTHON_DOWNLOADS := never

.PHONY: setup demo test lint clean

$(STAMP): pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "krag needs Python >= 3.11"'
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check uv
	$(VENV)/bin/uv pip install --quiet --python $(PY) -c constraints.txt -e ".[test]"
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(VENV)/bin/krag doctor

test: setup
	$(PY) -m pytest

lint: setup
	$(VENV)/bin/ruff check graph_flows storage ui prompts tests

clean:
	rm -rf $(VENV) .krag .pytest_cache
