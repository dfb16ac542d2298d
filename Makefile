# The two commands of the README:
#   make demo   create .venv if missing, install mbd_ros with ROS 2 from PyPI wheels, run the
#               hardware-in-the-loop demo (`mbd-ros hil-demo`: simulated arm7 + computed-torque
#               controller + reference publisher over ROS 2 topics, a few seconds)
#   make test   create .venv if missing, install mbd_ros with its test and ROS extras, run pytest
# Only python3 (with venv and pip) and make are needed; the rest comes from PyPI.
# The install is editable (pip install -e): the library, the sample URDFs and the CLI are used
# straight from this source tree. Reinstalls happen only when setup.py/setup.cfg/package.xml change.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PKG_FILES := setup.py setup.cfg package.xml pyproject.toml mbd_ros/fastcall/_fastcall.c

.PHONY: demo test clean

demo: $(VENV)/.installed-demo
	$(VENV)/bin/mbd-ros hil-demo

test: $(VENV)/.installed-test
	$(PY) -m pytest -q test

$(PY):
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed-demo: $(PY) $(PKG_FILES)
	$(PY) -m pip install -q -e '.[ros]'
	touch $@

$(VENV)/.installed-test: $(PY) $(PKG_FILES)
	$(PY) -m pip install -q -e '.[test,ros]'
	touch $@ $(VENV)/.installed-demo

clean:
	rm -rf $(VENV) build *.egg-info
