"""mbd_ros: recursive multibody dynamics for robots, numba-compiled, usable with or without ROS 2.

    import mbd_ros
    robot = mbd_ros.load("arm7.urdf")
    qdd = robot.forward_dynamics(q, v, tau)

See docs/design.md ("Library contract") for the API and conventions; docs/theory.md for the formalisms.
This package never imports rclpy; only mbd_ros.nodes does.
"""
from .constants import FRICTION_VELOCITY, STANDARD_GRAVITY  # noqa: E402
from .errors import ModelError  # noqa: E402
from .model import Model, build_model  # noqa: E402
from .robot import Robot  # noqa: E402
from .urdf import read_urdf  # noqa: E402

__all__ = ["load", "Robot", "Model", "ModelError", "FRICTION_VELOCITY", "STANDARD_GRAVITY"]
__version__ = "0.1.0"


def load(urdf, closures=None, floating_base=False, gravity=STANDARD_GRAVITY, passive_forces=True,
         friction_velocity=FRICTION_VELOCITY, strict_inertia=True):
    """Load a robot from a URDF file path or URDF XML text.

    closures: loop closures (path, YAML text or dict, docs/formats.md): the robot is then a
        ClosedLoopRobot whose dynamics respect the loops.
    floating_base: add a free joint 'root_joint' above the URDF root link.
    gravity: (3,) in the root frame, m/s^2.
    passive_forces: apply URDF <dynamics damping friction> as joint forces.
    friction_velocity: Coulomb friction F is smoothed as F tanh(v / friction_velocity); the
        default 1e-3 is close to sign(v) but stiff for explicit integrators at large F (the
        effective damping near v = 0 is F / friction_velocity): raise it for simulation.
    strict_inertia: with False, link inertias that break the triangle inequality (found in some
        published URDFs) are accepted with a warning instead of refused.
    Raises ModelError (a ValueError) naming the file and the link/joint at fault.
    """
    model = build_model(read_urdf(urdf, strict_inertia), floating_base=floating_base, gravity=gravity,
                        passive_forces=passive_forces, friction_velocity=friction_velocity)
    if closures is None:
        robot = Robot(model)
    else:
        from .closures import read_closures
        from .loops import ClosedLoopRobot
        robot = ClosedLoopRobot(model, read_closures(closures, model.link_names))
    robot._check_regular()
    return robot
