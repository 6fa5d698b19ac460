# GPU distributed training with TensorFlow — the two commands a user needs:
#   make lab    set up .venv and open the course in JupyterLab
#   make test   set up .venv and run every test and every notebook (smoke settings)
# and for readers:  make run   execute all notebooks with full settings into build/

VENV      := .venv
PY        := $(VENV)/bin/python
NOTEBOOKS := $(sort $(wildcard notebooks/[0-9][0-9]_*.ipynb))
PORT      ?= 8888
TB_PORT   ?= 6006
# The language `make lab` opens on: en (notebooks/) or zh (notebooks/zh/, the Chinese edition:
# `make lab COURSE_LANG=zh`; README.zh.md). Both stay reachable in JupyterLab's file browser.
COURSE_LANG ?= en

.PHONY: venv lab test test-unit test-notebooks test-rehearsals test-horovod run run-zh slides slide-check book format lint i18n horovod slurm bench tensorboard gpu-check assignments clean

venv:
	@bash tools/bootstrap.sh

lab: venv
	$(PY) -m jupyter lab --notebook-dir=notebooks --port=$(PORT) $(if $(filter 0,$(shell id -u)),--allow-root) \
		$(if $(filter zh,$(COURSE_LANG)),--LabApp.default_url=/lab/tree/zh)

# Unit tests, then the notebooks, while the Horovod environment builds in the background, then notebook 07 in it;
# beside them, in a copy of the tree, notebooks 08, 09 and 12, the GPU rehearsals and the Colab rehearsal.
# The parts alone: test-unit, test-notebooks, test-rehearsals, test-horovod.
test: venv
	@bash tools/run_tests.sh all

test-unit: venv
	@bash tools/run_tests.sh unit

test-notebooks: venv
	@bash tools/run_tests.sh notebooks

# The notebooks with a GPU path once more under the GPU rehearsal (one T4; three GPUs), on the CPU.
test-rehearsals: venv
	@bash tools/run_tests.sh rehearsals

# Notebook 07 runs in its own environment (Horovod 0.28.1 needs TensorFlow 2.12).
test-horovod: venv
	@bash tools/run_tests.sh horovod

horovod: venv
	bash tools/setup_horovod.sh

# Slurm and munge for notebook 11 (apt-get, as root), then a check: a 2-node local cluster runs srun -N 2 hostname.
slurm: venv
	CHECK=1 PYTHON=$(PY) bash tools/setup_slurm.sh

# Full settings, executed copies and HTML in build/ (takes a while on a CPU).
# (one notebook at a time, 07 in its own kernel: see tools/run_full.sh)
run: venv
	@bash tools/run_full.sh

# The same for the Chinese edition: notebooks/zh/ into build/zh/ (its printed text is Chinese).
run-zh: venv
	@bash tools/run_full.sh zh

# Slideshows (reveal.js) and a static site of the course, from the executed notebooks of
# `make run` in build/ (from notebooks/ without outputs if there are none): build/slides/,
# build/site/index.html, and the Chinese edition's in build/slides/zh/ and build/site/zh/ (from
# notebooks/zh/, with the outputs of `make run-zh`, else of the English copies where a cell prints
# no Chinese), each index, page and slideshow with a link to the other language.
# tools/check_site.sh screenshots both with headless Chromium.
slides: venv
	$(PY) tools/build_site.py slides

# The slides at a projector's 1280x720: headless Chromium counts, per notebook, the slides whose
# content is taller or wider than the slide, the %%writefile programs' slides apart (tools/slide_overflow.py;
# needs chromium, and build/reveal.js from tools/get_revealjs.sh to work offline). Not part of make test.
slide-check: slides
	$(PY) tools/slide_overflow.py

book: venv
	$(PY) tools/build_site.py all

# Strip outputs and normalise notebook metadata, give cells their slide types
# (the hygiene test checks the same); the Chinese edition follows (its cells copy them).
format: venv
	$(PY) tools/nbclean.py $(NOTEBOOKS)
	$(PY) -m tools.slidemeta $(NOTEBOOKS)
	$(PY) -m tools.i18n generate
	$(PY) -m ruff check --fix .

# The Chinese edition: merge the English notebooks' text into the catalogs i18n/zh_CN/*.po
# (new entries empty, changed ones fuzzy with the old English), list the missing and stale
# entries for a translator, and generate notebooks/zh/ (tools/i18n.py, i18n/README.md).
i18n: venv
	$(PY) -m tools.i18n all

lint: venv
	$(PY) tools/nbclean.py --check $(NOTEBOOKS) $(wildcard notebooks/zh/*.ipynb)
	$(PY) -m tools.slidemeta --check $(NOTEBOOKS) $(wildcard notebooks/zh/*.ipynb)
	$(PY) -m ruff check .

# The speed benchmarks (bench_pipeline_before_after.py: the data pipeline's rate now beside its
# rate before issue 47's simplification), then the sim-to-real check of issue 19: three small CNNs trained on the
# built-in doodles only, scored on the real drawings of data/real (about 25 min on 2 cores).
# SIM_TO_REAL=no skips it; SIM_TO_REAL_ARGS="--members 1" trains one CNN (8 min).
SIM_TO_REAL ?= yes
bench: venv
	@for script in benchmarks/bench_*.py; do echo "== $$script"; $(PY) $$script || exit 1; done
	@if [ "$(SIM_TO_REAL)" != no ]; then echo "== scripts/check_sim_to_real.py $(SIM_TO_REAL_ARGS)"; \
		$(PY) scripts/check_sim_to_real.py $(SIM_TO_REAL_ARGS); fi

# TensorBoard (with the profile plugin) on notebook 08's profiler logs: http://localhost:$(TB_PORT), Ctrl-C stops it.
tensorboard: venv
	$(PY) -m tensorboard.main --logdir build/08_performance --port $(TB_PORT)

# For machines with GPUs: every notebook with a GPU path (00-06, 08, 09; smoke settings), report and logs in build/.
gpu-check: venv
	$(PY) scripts/gpu_check.py

# Homework (issue 48): otter assign on each master in assignments/source/; the student versions go
# to assignments/student/ (committed), the autograders (solutions, hidden tests, zip) to build/assignments/.
assignments: venv
	$(PY) -m tools.build_assignments

clean:
	rm -rf build images .pytest_cache .ruff_cache
