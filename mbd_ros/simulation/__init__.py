"""Simulating a robot: the Simulator of robot.step (robot/integrators.py, re-exported here) and
robot.rollout's results and warnings (robot/rollout.py, re-exported here), the
plant a simulate node runs (plant.py: drives.py, limits.py, contact.py around the Simulator),
prescribed trajectories from waypoints (point_trajectory.py) and `mbd-ros simulate`'s report
(report.py). No ROS imports.
"""
from ..robot.integrators import (DEFAULT_INTEGRATOR, DEFAULT_MAX_STEP, INTEGRATORS,  # noqa: F401
                                 MAX_DEFAULT_DT, MAX_DEFAULT_SUBSTEPS, MAX_VELOCITY,
                                 SimulationDiverged, Simulator, UnstableStepWarning,
                                 default_max_step)
from ..robot.rollout import (Rollout, RolloutBatch, RolloutDiverged,  # noqa: F401
                             RolloutWarning)
