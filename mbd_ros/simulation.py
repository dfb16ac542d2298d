"""Temporary: the integrators moved to mbd_ros/robot/integrators.py."""
from .robot.integrators import *  # noqa
from .robot.integrators import (DEFAULT_INTEGRATOR, DEFAULT_MAX_STEP, INTEGRATORS,  # noqa: F401
                                MAX_DEFAULT_SUBSTEPS, MAX_VELOCITY, SimulationDiverged, Simulator)
