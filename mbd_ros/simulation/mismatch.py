"""Model mismatch of a simulated plant: the robot the plant integrates differs from the URDF
the controller uses (its masses, its joint friction, or another URDF). No ROS imports.

    true_robot = scaled_mass_robot(robot, 1.1)                    # every body 10 % heavier
    true_robot = scaled_mass_robot(robot, {"link_3": 1.5})       # one body
    xml = scaled_friction_urdf("arm.urdf", 2.0)                   # <dynamics> x 2, to load
    check_same_joints(robot, true_robot)                          # a second URDF's joints

Scaling all ten inertial parameters of a body by s (mass, first moment m c, rotational inertia)
keeps its centre of mass and its inertia physical (I scaled by s > 0 stays positive
semi-definite and satisfies the triangle inequality), and multiplies its contribution to the
inverse dynamics by s: the joint torques are linear in the parameters,
tau = Y(q, v, qdd) p (robot.regressor). So with one factor s for every body the plant's gravity
torque is s g(q) (URDF damping and friction, not inertial, are unchanged).
"""
from __future__ import annotations

import numpy as np

from ..inputs.urdf import read_xml
from ..kernels.regressor import N_PARAMETERS


def body_scales(robot, mass_scale):
    """(n_bodies,) the factor of each body of robot.body_names for mass_scale: one number
    (every body) or {link: factor} (the bodies whose root link is named; the others 1).
    ValueError naming the link or the value if invalid."""
    bodies = robot.body_names
    if isinstance(mass_scale, dict):
        factors = np.ones(len(bodies))
        index = {name: k for k, name in enumerate(bodies)}
        for link, factor in mass_scale.items():
            if link not in index:
                raise ValueError(f"mass scale: '{link}' is not a moving body of the robot (the "
                                 f"bodies, links merged by fixed joints into their parent's "
                                 f"body, are {bodies})")
            factors[index[link]] = _factor(factor, f"mass scale of '{link}'")
        return factors
    return np.full(len(bodies), _factor(mass_scale, "mass scale"))


def _factor(value, name):
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not (np.isfinite(value) and value > 0.0):
        raise ValueError(f"{name} must be a finite number > 0, got {value}")
    return value


def scaled_mass_robot(robot, mass_scale):
    """A new Robot (robot.with_inertial_parameters) whose bodies' inertial parameters are those
    of `robot` times body_scales(robot, mass_scale); `robot` itself is unchanged (and returned
    as is when every factor is 1). Rigid robots only (ValueError for flexible links)."""
    factors = body_scales(robot, mass_scale)
    if np.all(factors == 1.0):
        return robot
    parameters = np.asarray(robot.inertial_parameters(), dtype=float)
    return robot.with_inertial_parameters(parameters * np.repeat(factors, N_PARAMETERS))


def scaled_friction_urdf(urdf, friction_scale):
    """The URDF XML text of `urdf` (a file path or XML text; a .xacro path is refused: it would
    run code) with every joint's <dynamics damping friction> multiplied by friction_scale: one
    number >= 0 (every joint) or {joint: factor} (those joints). A joint without <dynamics>
    has no friction to scale. ValueError naming the joint or the value if invalid."""
    from ..inputs.xacro import is_xacro_path
    if isinstance(urdf, str) and is_xacro_path(urdf):
        raise ValueError(f"{urdf}: give the URDF's XML or a .urdf file (a xacro file is not "
                         "expanded here)")
    root, _ = read_xml(urdf)
    joints = {j.get("name"): j for j in root.findall("joint")}
    if isinstance(friction_scale, dict):
        unknown = sorted(set(friction_scale) - set(joints))
        if unknown:
            raise ValueError(f"friction scale: {unknown[:5]} are not joints of the URDF")
        factors = {name: _friction_factor(f, f"friction scale of '{name}'")
                   for name, f in friction_scale.items()}
    else:
        factor = _friction_factor(friction_scale, "friction scale")
        factors = {name: factor for name in joints}
    for name, factor in factors.items():
        dynamics = joints[name].find("dynamics")
        if dynamics is None:
            continue
        for attribute in ("damping", "friction"):
            value = dynamics.get(attribute)
            if value is not None:
                dynamics.set(attribute, repr(factor * float(value)))
    from lxml import etree
    return etree.tostring(root, encoding="unicode")


def _friction_factor(value, name):
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not (np.isfinite(value) and value >= 0.0):
        raise ValueError(f"{name} must be a finite number >= 0, got {value}")
    return value


def check_same_joints(robot, plant_robot, what="plant_urdf"):
    """ValueError naming the differences unless plant_robot has the joints of robot (names,
    types, order: the same q and v), as the plant and the controller must share them."""
    ours = list(zip(robot.joint_names, robot.joint_types))
    theirs = list(zip(plant_robot.joint_names, plant_robot.joint_types))
    if ours == theirs and (robot.nq, robot.nv) == (plant_robot.nq, plant_robot.nv):
        return
    missing = [n for n, _ in ours if n not in dict(theirs)]
    extra = [n for n, _ in theirs if n not in dict(ours)]
    typed = [f"{n} ({t} vs {dict(theirs)[n]})" for n, t in ours
             if n in dict(theirs) and dict(theirs)[n] != t]
    detail = "; ".join(x for x in (
        f"missing {missing[:10]}" if missing else "", f"extra {extra[:10]}" if extra else "",
        f"other types {typed[:10]}" if typed else "") if x) or "the joints come in another order"
    raise ValueError(f"{what}: its robot must have the controller's joints (names, types and "
                     f"order): {detail}")
