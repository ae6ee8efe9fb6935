# Two entry points: `make check` (set up, then a real kbtool check on every backend) and `make test`.
PYTHON ?= python3

.PHONY: setup check test

setup:
	bash scripts/install-system-packages.sh
	$(PYTHON) -m pip install -q --disable-pip-version-check -e '.[test]'
	kbtool env install --all

check: setup
	kbtool backends
	kbtool check

test: setup
	$(PYTHON) -m pytest -q
