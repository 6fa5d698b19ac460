# GPU distributed training with TensorFlow — the two commands a user needs:
#   make lab    set up .venv and open the course in JupyterLab
#   make test   set up .venv and run every test and every notebook (smoke settings)
# and for readers:  make run   execute all notebooks with full settings into build/

VENV      := .venv
PY        := $(VENV)/bin/python
NOTEBOOKS := $(sort $(wildcard notebooks/0*.ipynb))
MAIN_NBS  := $(filter-out notebooks/07_%,$(NOTEBOOKS))
HVD_NBS   := $(filter notebooks/07_%,$(NOTEBOOKS))
PORT      ?= 8888

.PHONY: venv lab test test-unit test-notebooks test-horovod run format lint horovod bench clean

venv:
	@bash scripts/bootstrap.sh

lab: venv
	$(PY) -m jupyter lab --notebook-dir=notebooks --port=$(PORT) $(if $(filter 0,$(shell id -u)),--allow-root)

# Unit tests, then notebooks 00-06, while the Horovod environment builds in the background;
# then notebook 07 in it (see scripts/run_tests.sh).
test: venv
	@bash scripts/run_tests.sh

test-unit: venv
	COURSE_SMOKE=1 $(PY) -m pytest tests -m "not horovod_env"

test-notebooks: venv
	COURSE_SMOKE=1 $(PY) -m pytest --nbval-lax --nbval-current-env --nbval-cell-timeout=900 $(MAIN_NBS)

# Notebook 07 runs in its own environment (Horovod 0.28.1 needs TensorFlow 2.12).
test-horovod: venv
	@if [ -n "$(HVD_NBS)" ]; then \
	  bash scripts/setup_horovod.sh; rc=$$?; \
	  if [ $$rc -eq 3 ]; then echo "notebook 07 not run: the Horovod environment cannot be built on this machine (reason above)"; \
	  elif [ $$rc -ne 0 ]; then exit $$rc; \
	  else COURSE_SMOKE=1 $(PY) -m pytest tests -m horovod_env && \
	    COURSE_SMOKE=1 $(PY) -m pytest --nbval-lax --nbval-kernel-name horovod --nbval-cell-timeout=900 $(HVD_NBS); fi; \
	fi

horovod: venv
	bash scripts/setup_horovod.sh

# Full settings, executed copies and HTML in build/ (takes a while on a CPU).
# (one notebook at a time, 07 in its own kernel: see scripts/run_full.sh)
run: venv
	@bash scripts/run_full.sh

# Strip outputs and normalise notebook metadata (the hygiene test checks the same).
format: venv
	$(PY) scripts/nbclean.py $(NOTEBOOKS)
	$(PY) -m ruff check --fix utils tests scripts notebooks

lint: venv
	$(PY) scripts/nbclean.py --check $(NOTEBOOKS)
	$(PY) -m ruff check utils tests scripts notebooks

bench: venv
	@for script in scripts/bench_*.py; do echo "== $$script"; $(PY) $$script || exit 1; done

clean:
	rm -rf build images .pytest_cache .ruff_cache
