"""Robot-specific generated dynamics kernels (docs/codegen.md).

    robot = mbd_ros.load("arm.urdf", codegen=True)   # a GeneratedRobot: same API and results

generator.py writes the Python source of one robot's kernels (expr.py and spatial_sym.py fold its
constants), cache.py stores it on disk keyed by a hash of the model, robot.py compiles it with
numba and runs it behind the Robot API.
"""
from .cache import cache_dir, model_key  # noqa: F401


# more bodies than this: generated_robot keeps the generic kernels (with a warning)
MAX_GENERATED_BODIES = 100


def generated_robot(model, robot):
    """The generated-kernel counterpart of `robot` (a Robot or ClosedLoopRobot built on `model`).

    Without a private, writable cache directory (codegen/cache.py) the kernels cannot be
    generated: `robot` itself (generic kernels) is returned with a warning naming the directories
    tried, rather than failing."""
    import warnings

    from ..loops import ClosedLoopRobot
    from .robot import GeneratedClosedLoopRobot, GeneratedRobot
    if model.n_bodies > MAX_GENERATED_BODIES:
        # straight-line code grows with the bodies and numba's compile time faster than that
        # (talos_reduced, 38 bodies: ~80 s of CPU for all six kernels): beyond this size the
        # generic kernels, which are linear in the bodies anyway, are the better choice
        warnings.warn(f"{model.source}: {model.n_bodies} bodies is more than codegen handles "
                      f"({MAX_GENERATED_BODIES}); using the generic kernels", stacklevel=3)
        return robot
    # ---- joint catalogue extensions: no generated code for them yet ----
    from .. import layout as L
    # (a universal joint is two bodies, and the generator names body i after joint i - 1)
    unsupported = sorted({L.JOINT_TYPE_NAMES[t] for t in model.body_int[1:, L.JOINT_TYPE]
                          if t in (L.JOINT_HELICAL, L.JOINT_CYLINDRICAL)}
                         | ({"universal"} & set(model.joint_types)))
    if unsupported:
        warnings.warn(f"{model.source}: codegen does not support {', '.join(unsupported)} joints; "
                      "using the generic kernels", stacklevel=3)
        return robot
    # ---- end joint catalogue extensions ----
    try:
        if isinstance(robot, ClosedLoopRobot):
            return GeneratedClosedLoopRobot(model, robot.closure_set)
        return GeneratedRobot(model)
    except OSError as exc:
        warnings.warn(f"{model.source}: generated kernels unavailable, using the generic ones: {exc}",
                      stacklevel=3)
        return robot
