"""Model mismatch of a simulated plant: the robot the plant integrates differs from the URDF
the controller uses (its masses scaled). No ROS imports.

    true_robot = scaled_mass_robot(robot, 1.1)                    # every body 10 % heavier
    true_robot = scaled_mass_robot(robot, {"link_3": 1.5})       # one body

Scaling all ten inertial parameters of a body by s (mass, first moment m c, rotational inertia)
keeps its centre of mass and its inertia physical (I scaled by s > 0 stays positive
semi-definite and satisfies the triangle inequality), and multiplies its contribution to the
inverse dynamics by s: the joint torques are linear in the parameters,
tau = Y(q, v, qdd) p (robot.regressor). So with one factor s for every body the plant's gravity
torque is s g(q) (URDF damping and friction, not inertial, are unchanged).
"""
from __future__ import annotations

import numpy as np

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
