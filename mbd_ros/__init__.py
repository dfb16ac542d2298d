"""mbd_ros: recursive multibody dynamics for robots, numba-compiled, usable with or without ROS 2.

    import mbd_ros
    robot = mbd_ros.load("arm7.urdf")
    qdd = robot.forward_dynamics(q, v, tau)

See docs/design.md ("Library contract") for the API and conventions; docs/theory.md for the formalisms.
This package never imports rclpy; only mbd_ros.nodes does.
"""
# a node process stopped while it imports exits quietly (mbd_ros/nodes/quiet_start.py): first,
# before the heavy imports below
from .nodes.quiet_start import install_if_node_process as _install_quiet_stop  # noqa: E402
_install_quiet_stop()
from . import aliases  # noqa: E402
from .constants import FRICTION_VELOCITY, STANDARD_GRAVITY  # noqa: E402
from .errors import ModelError  # noqa: E402
from .inputs.urdf import read_urdf  # noqa: E402
from .model import Model, build_model  # noqa: E402
from .robot import Robot  # noqa: E402

aliases.install()   # module paths of earlier versions (mbd_ros.plant, mbd_ros.loops, ...)

__all__ = ["load", "Robot", "Model", "ModelError", "FRICTION_VELOCITY", "STANDARD_GRAVITY"]
__version__ = "0.1.0"

# subpackages reachable as attributes without importing them first (`mbd_ros.sweep.run_sweep`,
# `mbd_ros.simulation.Plant`): imported on first access, so `import mbd_ros` stays light
_LAZY_SUBPACKAGES = ("simulation", "sweep", "codegen", "interfaces")


def __getattr__(name):
    if name in _LAZY_SUBPACKAGES:
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load(urdf, closures=None, floating_base=False, gravity=STANDARD_GRAVITY, passive_forces=True,
         friction_velocity=FRICTION_VELOCITY, strict_inertia=False, flexible=None, codegen=False,
         forces=None, mimic=False):
    """Load a robot from a URDF file path or URDF XML text.

    Returns a Robot (one class for every kind of robot: its parts follow from these arguments).
    A path ending in `.xacro` is expanded with xacro first, and that runs the file's code: its
    ${...} expressions are Python that can reach os.system. Load only xacro files you would
    run. The expansion runs in a child process limited in time and memory
    (mbd_ros/inputs/xacro_process.py: a runaway expression is a ModelError naming the file);
    XML text is never expanded.

    closures: loop closures (path, YAML text or dict, docs/formats.md): the dynamics respect
        the loops.
    floating_base: add a free joint 'root_joint' above the URDF root link.
    gravity: (3,) in the root frame, m/s^2.
    passive_forces: apply URDF <dynamics damping friction> as joint forces.
    friction_velocity: Coulomb friction F is smoothed as F tanh(v / friction_velocity); the
        default 1e-3 is close to sign(v) but stiff for explicit integrators at large F (the
        effective damping near v = 0 is F / friction_velocity): raise it for simulation.
    strict_inertia: inertias must be physically consistent (positive semi-definite, triangle
        inequality, no rotational inertia without mass), each link's as written and each moving
        body's merged one (links welded by fixed joints summed: what the dynamics uses). With
        True an inconsistent link or body is a ModelError naming the link. With False (the
        default; published URDFs often break this, e.g. by rounding) each problem gives one
        warning naming the link, saying whether its merged body absorbs the defect, and the
        inertia is used as written, as Pinocchio does.
    A joint that moves no mass (massless links below it) gives a warning at load; its
    forward dynamics then raise ValueError, while inverse dynamics and kinematics work.
    flexible: flexible links (path, YAML text or dict with a `flexible_links:` section,
        docs/flexible.md): the robot then has elastic coordinates.
    codegen: run robot-specific generated kernels (mbd_ros.codegen, docs/codegen.md): same
        methods and results; generated and compiled once per model, then cached on disk.
    forces: force elements (spring_damper, joint_spring, bushing; path, YAML text or dict with a
        `forces:` section, which may be the closures file): they act in every dynamics call
        and simulation step (docs/forces.md).
    mimic: with True, URDF <mimic> joints are coupled to their leaders (q_m = r q_l + o, not
        independent degrees of freedom); False (default, as Pinocchio's parser) keeps them
        independent.
    Raises ModelError (a ValueError) naming the file and the link/joint at fault.
    """
    from .robot.build import load as build
    return build(urdf, closures=closures, floating_base=floating_base, gravity=gravity,
                 passive_forces=passive_forces, friction_velocity=friction_velocity,
                 strict_inertia=strict_inertia, flexible=flexible, codegen=codegen,
                 forces=forces, mimic=mimic)
