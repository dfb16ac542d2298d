# The two commands of the README:
#   make demo   create .venv if missing, install mbd_ros with ROS 2 from PyPI wheels, run the
#               hardware-in-the-loop demo (`mbd-ros hil-demo`: simulated arm7 + computed-torque
#               controller + reference publisher over ROS 2 topics, a few seconds)
#   make test   create .venv if missing, install mbd_ros with its test and ROS extras, run pytest
#               on two workers (options and accepted warnings: setup.cfg; grouping: test/conftest.py)
# Only python3 (with venv, pip and its headers), make, gcc, g++ and cmake are needed; the rest
# comes from PyPI.
# The install is editable (pip install -e): the library, the sample URDFs and the CLI are used
# straight from this source tree. Reinstalls happen only when setup.py/setup.cfg/package.xml change.
# tf2_msgs (/tf) and control_msgs (~/follow_joint_trajectory) have no PyPI wheel:
# `mbd-ros build-interfaces` (mbd_ros/interfaces/build.py) generates and compiles them into .venv
# from the PyPI ROS 2 interface generators (needs gcc, g++, cmake; ~1-2 min once; skipped when
# they already import).

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PKG_FILES := setup.py setup.cfg package.xml pyproject.toml mbd_ros/fastcall/_fastcall.c \
	tools/build_tf2_msgs.py mbd_ros/interfaces/build.py \
	$(wildcard mbd_ros/interfaces/*/CMakeLists.txt mbd_ros/interfaces/*/*/*.msg \
	           mbd_ros/interfaces/*/*/*.action)

.PHONY: demo test clean bench-mujoco

demo: $(VENV)/.installed-demo
	$(VENV)/bin/mbd-ros hil-demo

# two pytest workers (pytest-xdist): the tests that start ROS node processes run one after another
# on one of them, the other modules wherever a worker is free (test/conftest.py); TEST_WORKERS=0
# runs everything in this process
TEST_WORKERS ?= 2
test: $(VENV)/.installed-test
	$(PY) -m pytest $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder) test

$(PY):
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed-demo: $(PY) $(PKG_FILES)
	$(PY) -m pip install -q -e '.[ros]'
	$(VENV)/bin/mbd-ros build-interfaces
	touch $@

$(VENV)/.installed-test: $(PY) $(PKG_FILES)
	$(PY) -m pip install -q -e '.[test,ros]'
	$(VENV)/bin/mbd-ros build-interfaces
	touch $@ $(VENV)/.installed-demo

# MuJoCo comparison (bench/bench_mujoco.py): its own venv, so mujoco is never a dependency of
# the package; mbd_ros is installed editable there without extras (bench/README.md)
BENCH_VENV := .venv-bench
$(BENCH_VENV)/.installed: setup.py setup.cfg pyproject.toml mbd_ros/fastcall/_fastcall.c
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install -q -e . mujoco
	touch $@

bench-mujoco: $(BENCH_VENV)/.installed
	$(BENCH_VENV)/bin/python bench/bench_mujoco.py

clean:
	rm -rf $(VENV) $(BENCH_VENV) build *.egg-info
