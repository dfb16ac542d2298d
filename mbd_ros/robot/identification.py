"""Identification: the bodies' inertial parameters and the joint-torque regressor (docs/identification.md).

Parameters: per moving body (the Model's bodies 1..nb, links merged by fixed joints, in
`Robot.body_names` order) the ten numbers [m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz, I_yz,
I_zz] about the body origin, body frame (I = I_c - m [c][c]: Pinocchio's
Inertia::toDynamicParameters). The regressor Y(q, v, qdd) (nv, 10 nb) gives the rigid tree's
inverse dynamics as Y pi (kernels/regressor.py).

What this module does for the Robot: read the parameters out of a Model, check a parameter
vector, write it into a copy of the Model (model_with_parameters), and hold the regressor's
per-robot workspace (JointTorqueRegressor).
"""
from __future__ import annotations

import dataclasses
import warnings
from functools import partial

import numpy as np

from ..inputs.urdf import inertia_problem
from ..kernels.regressor import N_PARAMETERS, WORK_WIDTH, joint_torque_regressor
from ..model import layout as L
from . import arguments as A


def _skew(p):
    return np.array([[0.0, -p[2], p[1]], [p[2], 0.0, -p[0]], [-p[1], p[0], 0.0]])


def body_parameters(inertia):
    """The ten parameters of a 6x6 rigid-body inertia about its frame origin,
    [[m 1, -[h]], [[h], I_o]] (model.spatial_inertia)."""
    return np.array([inertia[0, 0], inertia[1, 5], inertia[2, 3], inertia[0, 4],
                     inertia[3, 3], inertia[3, 4], inertia[4, 4], inertia[3, 5], inertia[4, 5],
                     inertia[5, 5]])


def spatial_inertia_of(parameters):
    """6x6 rigid-body inertia about the frame origin of ten parameters (body_parameters' inverse)."""
    m, hx, hy, hz, ixx, ixy, iyy, ixz, iyz, izz = parameters
    h = np.array([hx, hy, hz])
    out = np.zeros((6, 6))
    out[:3, :3] = m * np.eye(3)
    out[:3, 3:] = -_skew(h)
    out[3:, :3] = _skew(h)
    out[3:, 3:] = [[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]]
    return out


def inertial_parameters(model):
    """(10 nb,) the parameters of the model's moving bodies (module docstring)."""
    nb = model.n_bodies
    out = np.empty(N_PARAMETERS * nb)
    for i in range(1, nb + 1):
        inertia = model.body_float[i, L.SPATIAL_INERTIA:L.SPATIAL_INERTIA + 36].reshape(6, 6)
        out[N_PARAMETERS * (i - 1):N_PARAMETERS * i] = body_parameters(inertia)
    return out


def parameter_problem(p):
    """None if the ten parameters p are those of a rigid body (mass >= 0, inertia about the
    centre of mass positive semi-definite and within the triangle inequality, no first moment
    without mass), else what is wrong."""
    m = p[0]
    h = p[1:4]
    inertia_origin = spatial_inertia_of(p)[3:, 3:]
    if m < 0.0:
        return f"negative mass {m:g} kg"
    if m == 0.0:
        if np.any(h != 0.0):
            return f"zero mass but a non-zero first moment m c = {h.tolist()}"
        return inertia_problem(0.0, inertia_origin)
    c = _skew(h / m)
    # I_o = I_c - m [c][c]  =>  I_c = I_o + m [c][c]
    return inertia_problem(m, inertia_origin + m * c @ c)


def checked_parameters(parameters, model, strict_inertia, name="parameters"):
    """parameters as a (10 nb,) float64 array; ValueError naming the argument for a wrong size
    or NaN/inf, and naming the body for a negative mass or a non-physical inertia (a warning
    instead when not strict_inertia)."""
    n = N_PARAMETERS * model.n_bodies
    try:
        p = A.vector(parameters, n, name)
    except ValueError as exc:
        raise ValueError(f"{exc} (10 per moving body: {model.n_bodies} bodies)") from None
    p = p.copy()
    if not np.all(np.isfinite(p)):
        raise ValueError(f"{name} contains NaN or inf")
    for i in range(1, model.n_bodies + 1):
        block = p[N_PARAMETERS * (i - 1):N_PARAMETERS * i]
        problem = parameter_problem(block)
        if problem is None:
            continue
        message = (f"{name}[{N_PARAMETERS * (i - 1)}:{N_PARAMETERS * i}], body "
                   f"'{model.body_names[i]}': {problem}")
        if strict_inertia:
            raise ValueError(message + "; with_inertial_parameters(..., strict_inertia=False) "
                             "accepts it with a warning")
        warnings.warn(message + "; used as given", UserWarning, stacklevel=3)
    return p


def model_with_parameters(model, p):
    """A copy of `model` whose moving bodies have the (checked) parameters p. The body's 6x6
    inertia, mass and centre of mass are replaced; of its links, the welded ones keep their URDF
    inertias (what fixed-joint wrenches use) and the body's root link (the child link of its
    movable joint) takes the rest, so that the links still add up to the body."""
    body_float = np.array(model.body_float)
    link_float = np.array(model.link_float)
    link_index = {name: k for k, name in enumerate(model.link_names)}
    link_body = model.link_int[:, L.LINK_BODY]
    total_mass = float(model.total_mass)
    for i in range(1, model.n_bodies + 1):
        block = p[N_PARAMETERS * (i - 1):N_PARAMETERS * i]
        inertia = spatial_inertia_of(block)
        old = body_float[i, L.SPATIAL_INERTIA:L.SPATIAL_INERTIA + 36].reshape(6, 6)
        root = link_index.get(model.body_names[i])   # None: a universal joint's cross
        if root is not None and link_body[root] == i:
            others = [k for k in np.flatnonzero(link_body == i) if k != root]
            welded = sum((link_float[k, L.LINK_INERTIA:L.LINK_INERTIA + 36].reshape(6, 6)
                          for k in others), np.zeros((6, 6)))
            link_float[root, L.LINK_INERTIA:L.LINK_INERTIA + 36] = (inertia - welded).ravel()
        total_mass += block[0] - old[0, 0]
        body_float[i, L.SPATIAL_INERTIA:L.SPATIAL_INERTIA + 36] = inertia.ravel()
        body_float[i, L.MASS] = block[0]
        body_float[i, L.COM:L.COM + 3] = block[1:4] / block[0] if block[0] > 0 else 0.0
    for array in (body_float, link_float):
        array.setflags(write=False)
    return dataclasses.replace(model, body_float=body_float, link_float=link_float,
                               total_mass=total_mass)


class JointTorqueRegressor:
    """The regressor kernel bound to a rigid tree's model arrays and its own workspace (one per
    robot, built at the first call). `call(q, v, qdd, out) -> status` is one GIL-holding kernel
    call: atomic, like the trees' lock-free calls. `install_c_call(robot)` replaces
    robot.regressor by a C-level KernelCall of the same kernel on the same arrays for the form
    regressor(q, v, qdd, out=out) (mbd_ros.fastcall: ~0.4 us less numba dispatch per call);
    the Robot does it at the second fast call, as for its dynamics, and its allocating form then
    calls the entry too (`c_call`)."""

    def __init__(self, tree):
        self.nq = tree.nq
        self.nv = tree.nv
        self.n_columns = N_PARAMETERS * tree.model.n_bodies
        self.work = np.zeros((tree.model.n_bodies + 1, WORK_WIDTH))
        self.bound = (tree.body_int, tree.body_float, self.work)
        self.call = partial(joint_torque_regressor, *self.bound)
        self.fast_calls = 0   # calls that took the fast path in Python (until the C entry)
        self.c_call = None    # the installed KernelCall (robot.regressor's out= form)

    def install_c_call(self, robot):
        """Install the C entry as robot.regressor (warn and keep numba's dispatcher if it
        cannot be built). Returns the KernelCall or None."""
        from .. import fastcall
        if not fastcall.AVAILABLE:
            return None
        try:
            from ..fastcall.regressor_entry import regressor_c
            dims = fastcall.dims_of(*self.bound) + (self.nq, self.nv, self.n_columns)
            self.c_call = fastcall.install(robot, "regressor", regressor_c, self.bound, dims,
                                           (self.nq, self.nv, self.nv, self.nv),
                                           self.n_columns)
            return self.c_call
        except Exception as exc:   # noqa: BLE001 -- numba's dispatcher: slower, same results
            warnings.warn(f"regressor: no C-level entry ({type(exc).__name__}: {exc}); calls "
                          "go through numba's dispatcher", RuntimeWarning, stacklevel=4)
            return None


def tree_like(tree, model):
    """A tree of the same kind as `tree` (generic or generated kernels) on `model`."""
    from .rigid_tree import RigidTree
    if tree.kind == "generated":
        from .generated_tree import GeneratedTree
        try:
            return GeneratedTree(model)
        except OSError as exc:
            warnings.warn(f"{model.source}: generated kernels unavailable, using the generic "
                          f"ones: {exc}", stacklevel=3)
    return RigidTree(model)


def loops_on(tree, closure_set):
    """The rigid loop closures of `closure_set` on `tree`."""
    from .loop_kinematics import RigidLoopKinematics
    return RigidLoopKinematics(tree, closure_set)


def mimic_on(mimic, model):
    """The mimic couplings `mimic` (MimicCouplings) rebuilt on `model` (same joints)."""
    from .mimic import MimicCouplings
    joint_of_dof = {int(iv): name for name, iv in zip(model.joint_names, model.idx_v)}
    mimics = [(name, joint_of_dof[lead], multiplier, offset)
              for name, (_, _, _, lead, multiplier, offset) in zip(mimic.joints, mimic.pairs)]
    return MimicCouplings(model, mimics, model.source)
