# The two commands of the README:
#   make demo   create .venv if missing, install mbd_ros into it, run `mbd-ros demo`
#   make test   create .venv if missing, install mbd_ros with its test extra, run pytest
# Only python3 (with venv and pip) and make are needed; the rest comes from PyPI.
# The install is editable (pip install -e): the library, the sample URDFs and the CLI are used
# straight from this source tree. Reinstalls happen only when setup.py/setup.cfg/package.xml change.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PKG_FILES := setup.py setup.cfg package.xml

.PHONY: demo test clean

demo: $(VENV)/.installed-base
	$(VENV)/bin/mbd-ros demo

test: $(VENV)/.installed-test
	$(PY) -m pytest -q test

$(PY):
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed-base: $(PY) $(PKG_FILES)
	$(PY) -m pip install -q -e .
	touch $@

$(VENV)/.installed-test: $(PY) $(PKG_FILES)
	$(PY) -m pip install -q -e '.[test]'
	touch $@ $(VENV)/.installed-base

clean:
	rm -rf $(VENV) build *.egg-info
