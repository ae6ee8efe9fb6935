# Two entry points: `make check` (set up, then a real kbtool check on every backend) and `make test`.
PYTHON ?= python3

.PHONY: setup check test lint docs reports models-report bench-report history gpu-reports

# pip first: the system-package list comes from the recipes (`kbtool env system-packages`).
# `kbtool env install --all` exits 0 when every env it could build is built and the only ones left out lack their
# Python (a `skipped: ...` line names them and the ways to get one: pyenv, uv, conda, --python PATH,
# KBTOOL_PYTHON_3_6=PATH), so `make check` and `make test` go on with the backends this machine has (`kbtool check`
# lists the others as not installed); a real install failure exits 2 and stops make.
setup:
	$(PYTHON) -m pip install -q --disable-pip-version-check -e '.[test,lint]'
	PYTHON=$(PYTHON) bash scripts/install-system-packages.sh
	kbtool env install --all

check: setup
	kbtool backends
	kbtool check

# The fast suite first, on two workers (pytest-xdist; it starts no backend env), then the backend tests in one
# process (they install and share envs): the same tests as a plain `pytest`, minutes sooner on CI's two cores.
test: setup
	$(PYTHON) -m pytest -q -m "not backends" -n 2
	$(PYTHON) -m pytest -q -m backends

# The linters CI runs (configured in pyproject.toml): ruff's lint and format, mypy (strict at the seams), and the
# docs build with warnings as errors.
lint:
	$(PYTHON) -m pip install -q --disable-pip-version-check -e '.[lint]'
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .
	$(PYTHON) -m mypy
	$(MAKE) docs

# The docs site (mkdocs.yml, docs/) into site/; a warning fails the build. Command pages embed each --help.
docs:
	$(PYTHON) -m pip install -q --disable-pip-version-check -e '.[docs]'
	$(PYTHON) -m mkdocs build --strict

# The published model report in reports/: the whole zoo on every engine (kbtool models), every view of one run.
models-report: setup
	kbtool models -o reports/models.json -o reports/models.md -o reports/models.html -o reports/models.xml

# The published parity reports in reports/: one full run under the documented keras.json defaults, every view
# rendered from the same JSON (summary.md: the few lines a PR comment needs), the shard timings re-recorded from
# it, and a screenshot of the scoreboard page.
reports: setup
	kbtool check --keras-config defaults -o reports/parity.json -o reports/parity.md -o reports/parity.html \
		-o reports/parity.xml
	kbtool report render reports/parity.json --format summary > reports/summary.md
	$(PYTHON) scripts/record-timings.py reports/parity.json
	$(PYTHON) scripts/compare-backends.py reports/parity.json tensorflow1 tensorflow > reports/tensorflow1-vs-tensorflow.md
	kbtool report migration reports/parity.json -o reports/migration.md
	kbtool report migration reports/parity.json -o reports/migration.html
	HEIGHT=1000 bash scripts/screenshot-report.sh reports/parity.html reports/parity.png

# The published release sweeps in reports/ and the parity history drawn from them (a sweep exits 1 when a release
# could not be installed: keras 2.2.0-2.2.2 conflict with TensorFlow 1.15's keras-applications; 2 still stops)
history:
	rm -f reports/history.jsonl
	kbtool check --keras-config defaults --backend tensorflow --versions tf-keras=2.14.1..2.21.0 \
		-o reports/sweep-tf-keras.md --history reports/history.jsonl; test $$? -le 1
	kbtool check --keras-config defaults --backend tensorflow1 --versions keras=2.0.0..2.3.1 \
		-o reports/sweep-keras-tensorflow1.md --history reports/history.jsonl; test $$? -le 1
	kbtool check --keras-config defaults --backend theano --versions theano=1.0.0..1.0.5 \
		-o reports/sweep-theano.md --history reports/history.jsonl
	kbtool report history reports/history.jsonl -o reports/history.html
	kbtool report history reports/history.jsonl -o reports/history.md

# The published GPU reports in reports/gpu/, from the reports of a GPU run (GPU_DATA: a folder holding cpu,
# gpu-default, jaxgpu-highest and torchgpu-highest .json.gz, as ../shared/data/gpu-h100-2026-11-28 does): the GPU
# run judged against the known file (each device result classified with the highest-precision runs), and what the
# GPU computes otherwise than the same machine's CPU. A newer GPU run replaces them.
GPU_DATA ?= ../shared/data/gpu-h100-2026-11-28
gpu-reports:
	kbtool report judge $(GPU_DATA)/gpu-default.json.gz --highest $(GPU_DATA)/jaxgpu-highest.json.gz \
		--highest $(GPU_DATA)/torchgpu-highest.json.gz -o reports/gpu/parity.md -o reports/gpu/parity.html; \
		test $$? -le 1
	kbtool report devices $(GPU_DATA)/cpu.json.gz $(GPU_DATA)/gpu-default.json.gz \
		--highest $(GPU_DATA)/jaxgpu-highest.json.gz --highest $(GPU_DATA)/torchgpu-highest.json.gz \
		-o reports/gpu/devices.md -o reports/gpu/devices.json

# The published bench in reports/: every op on every backend at all three sizes (run it on a quiet machine).
bench-report: setup
	kbtool bench --sizes all -o reports/bench.json -o reports/bench.md -o reports/bench.html
