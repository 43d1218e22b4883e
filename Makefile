# Attention and Transformers from Scratch: set-up and checks.
#   make test    set-up (virtual environment, pinned dependencies), then every test
#   make bench   the speed benchmark against PyTorch's own modules
# Another PyTorch build (CUDA, ROCm, another version): make TORCH="torch==2.5.1" test, or
# install torch into .venv yourself first and then run make.

PYTHON ?= python3
VENV   ?= .venv
TORCH  ?= torch==2.13.0
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: setup test bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet "$(TORCH)"
	$(PY) -m pip install --quiet -e ".[test]"
	touch $@

setup: $(STAMP)

test: $(STAMP)
	$(PY) -m pytest

bench: $(STAMP)
	$(PY) benchmarks/attention.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis companion.egg-info
