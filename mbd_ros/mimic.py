"""Mimic joints (URDF <mimic joint="leader" multiplier="r" offset="o"/>) as coupling constraints.

With load(..., mimic=True) a mimicking joint m follows its leader l: q_m = r q_l + o, so
v_m = r v_l and qdd_m = r qdd_l (a linear, scleronomic constraint: gamma = 0). The mimicking
joint keeps its place in q and v (joint_states still report it) but is no independent degree of
freedom. With the independent coordinates z (every dof but the mimicking ones) and the coupling
matrix T (nv, nz): v = T z, qdd = T z'. The equations of motion in z are the tree's projected
by T (the minimal-coordinate form, docs/theory.md §5 end, with J_l = T):

    (T^T M T) z'' = T^T (tau - h),     h = the tree's inverse dynamics at qdd = 0

and the coupling force is the rest, M qdd + h - tau. Inverse dynamics returns drive forces on
the independent joints only (a mimic joint is driven through its leader): tau_z = T^T (M qdd + h).

Closed loops (load(..., closures=..., mimic=True)): each coupling is one more linear
constraint row next to the loops' (docs/theory.md §4, §6),

    g_m = q_m - r q_l - o = 0,     G_m = e_m^T - r e_l^T,     G_m v = v_m - r v_l,   gamma_m = 0,

appended to loop_state (so assembly, velocity / acceleration projection, the minimal-coordinate
formalism, the state projection of step, prescribed motion and inverse dynamics all respect it).
Forward dynamics (default) runs the recursive closed-loop solver with the coupling forces
G_m^T mu added to the drives, mu from superposition (the loop forward dynamics is affine in
tau: m + 2 recursive solves and an m x m system); method="kkt" solves the dense KKT system of
the tree with all rows instead (minimum-norm with redundant rows; Baumgarte terms on every row):

    [ M   -G^T ] [ qdd    ]   [ tau - h                          ]
    [ G    0   ] [ lambda ] = [ -gamma - 2 alpha G v - beta^2 g  ]

The loop multipliers (multipliers(), closure wrenches) are the loop rows' part of lambda; the
coupling rows' part is the force that keeps the mimic joint on its leader. Inverse dynamics
returns the drive forces of the closure file's actuated joints, as for any closed-loop robot.

load(..., mimic=False) (the default, as Pinocchio's URDF parser) keeps every joint independent.
"""
from __future__ import annotations

import numpy as np

from .errors import ModelError, excerpt
from .joint_map import ONE_DOF_TYPES


def read_mimics(urdf, source_name):
    """[(joint, leader, multiplier, offset)] of the <mimic> tags of a URDF (path, XML text, a
    .xacro path: expanded, or the TreeSpec mbd_ros.urdf.read_urdf made of it)."""
    from .urdf import TreeSpec, mimic_tags, read_xml
    if isinstance(urdf, TreeSpec):
        tags = urdf.mimics
    else:
        tags = mimic_tags(read_xml(urdf)[0])
    mimics = []
    for name, leader, multiplier, offset in tags:
        where = f"{source_name}: joint '{excerpt(str(name), 80)}'"
        if not leader:
            raise ModelError(f"{where}: <mimic> needs a joint attribute")
        try:
            multiplier = float("1" if multiplier is None else multiplier)
            offset = float("0" if offset is None else offset)
        except ValueError:
            raise ModelError(f"{where}: <mimic> multiplier and offset must be numbers") from None
        if not (np.isfinite(multiplier) and np.isfinite(offset)):
            raise ModelError(f"{where}: <mimic> multiplier and offset must be finite")
        mimics.append((name, leader, multiplier, offset))
    return mimics


def attach(robot, urdf):
    """Make `robot` honour the URDF's mimic tags (swaps in the MimicMixin behaviour). urdf: the
    TreeSpec the robot was built from (mbd_ros.load passes it: a .xacro is expanded once), or a
    URDF path / XML text."""
    source = robot.model.source
    mimics = read_mimics(urdf, source)
    if not mimics:
        return robot
    index = {name: j for j, name in enumerate(robot.joint_names)}
    coupling = np.eye(robot.nv)
    dependent, pairs = [], []
    for name, leader, multiplier, offset in mimics:
        for role, joint in (("mimicking", name), ("leader", leader)):
            if joint not in index:
                raise ModelError(f"{source}: joint '{name}': <mimic joint='{leader}'>: the {role} "
                                 f"joint '{joint}' is not a movable joint")
            if robot.joint_types[index[joint]] not in ONE_DOF_TYPES:
                raise ModelError(f"{source}: joint '{name}': <mimic>: the {role} joint '{joint}' "
                                 "must have one degree of freedom (revolute, continuous, "
                                 "prismatic, helical)")
        if leader in {m[0] for m in mimics}:
            raise ModelError(f"{source}: joint '{name}' mimics '{leader}', which itself mimics "
                             "another joint: chains of mimic joints are not supported")
        m, lead = robot.idx_v[index[name]], robot.idx_v[index[leader]]
        coupling[m] = 0.0
        coupling[m, lead] = multiplier
        dependent.append(m)
        pairs.append((int(robot.idx_q[index[name]]), int(robot.idx_q[index[leader]]),
                      int(m), int(lead), multiplier, offset))
    independent = np.setdiff1d(np.arange(robot.nv), dependent)
    robot.mimic_joints = [m[0] for m in mimics]
    robot.mimic_coupling = np.ascontiguousarray(coupling[:, independent])   # T (nv, nz)
    robot.mimic_independent = independent
    robot._mimic_pairs = pairs
    mixin = MimicLoopMixin if robot.closure_names else MimicMixin
    robot.__class__ = type("Mimic" + type(robot).__name__, (mixin, type(robot)), {})
    return robot


class _MimicConfiguration:
    """neutral() and apply_mimic() of a robot with coupled mimic joints."""

    def neutral(self):
        """(nq,) the zero configuration with the mimic couplings applied (q_m = offset)."""
        return self.apply_mimic(super().neutral())

    def apply_mimic(self, q, v=None):
        """q (and v) with every mimicking joint set from its leader: q_m = r q_l + o, v_m = r v_l."""
        q = np.array(q, dtype=float)
        for iq_m, iq_l, iv_m, iv_l, multiplier, offset in self._mimic_pairs:
            q[iq_m] = multiplier * q[iq_l] + offset
        if v is None:
            return q
        v = np.array(v, dtype=float)
        for _, _, iv_m, iv_l, multiplier, _ in self._mimic_pairs:
            v[iv_m] = multiplier * v[iv_l]
        return q, v

    def couple_in_place(self, q=None, v=None, qdd=None):
        """Set the mimicking joints' entries of the given arrays from their leaders, in place:
        q_m = r q_l + o (q (nq,)), v_m = r v_l, qdd_m = r qdd_l ((nv,) each)."""
        for iq_m, iq_l, iv_m, iv_l, multiplier, offset in self._mimic_pairs:
            if q is not None:
                q[iq_m] = multiplier * q[iq_l] + offset
            if v is not None:
                v[iv_m] = multiplier * v[iv_l]
            if qdd is not None:
                qdd[iv_m] = multiplier * qdd[iv_l]


class MimicMixin(_MimicConfiguration):
    """forward / inverse dynamics of a tree robot with coupled mimic joints."""

    def forward_dynamics(self, q, v, tau, f_ext=None, out=None, **options):
        """qdd (nv,) with the mimic joints coupled: (T^T M T) z'' = T^T (tau - h), qdd = T z''."""
        from .robot import Robot, _vector
        if options.get("prescribed") is not None:   # the couplings as constraint rows
            from .prescribed import dispatch
            return dispatch(self, q, v, tau, f_ext, out, options["prescribed"],
                            options.get("return_torques", False))
        tau = _vector(tau, self.nv, "tau")
        mass = Robot.mass_matrix(self, q).copy()
        h = Robot.inverse_dynamics(self, q, v, np.zeros(self.nv), f_ext=f_ext).copy()
        T = self.mimic_coupling
        z = np.linalg.solve(T.T @ mass @ T, T.T @ (tau - h))
        result = T @ z
        if out is not None:
            out[:] = result
            return out
        return result

    def inverse_dynamics(self, q, v, qdd, f_ext=None, out=None):
        """Drive forces (nv,) on the independent joints (zeros on mimicking joints) that produce
        the coupled qdd: tau_z = T^T (M qdd + h). Raises ValueError if qdd breaks a coupling."""
        from .robot import Robot, _vector
        qdd = _vector(qdd, self.nv, "qdd")
        for _, _, iv_m, iv_l, multiplier, _ in self._mimic_pairs:
            if abs(qdd[iv_m] - multiplier * qdd[iv_l]) > 1e-9 * max(1.0, abs(qdd[iv_l])):
                raise ValueError(f"qdd breaks a mimic coupling (qdd[{iv_m}] must be "
                                 f"{multiplier} x qdd[{iv_l}])")
        tau_tree = Robot.inverse_dynamics(self, q, v, qdd, f_ext=f_ext)
        result = np.zeros(self.nv)
        result[self.mimic_independent] = self.mimic_coupling.T @ tau_tree
        if out is not None:
            out[:] = result
            return out
        return result


class MimicLoopMixin(_MimicConfiguration):
    """A closed-loop robot with coupled mimic joints: the couplings are constraint rows appended
    to the loops' (module docstring)."""

    def _mimic_rows(self, q, v):
        """(g_m (m,), G_m (m, nv), G_m v (m,)) of the couplings at (q, v)."""
        pairs = self._mimic_pairs
        g = np.empty(len(pairs))
        jac = np.zeros((len(pairs), self.nv))
        for k, (iq_m, iq_l, iv_m, iv_l, multiplier, offset) in enumerate(pairs):
            g[k] = q[iq_m] - multiplier * q[iq_l] - offset
            jac[k, iv_m] = 1.0
            jac[k, iv_l] -= multiplier
        return g, jac, jac @ v

    def loop_state(self, q, v=None):
        """(g (b + m,), G (b + m, nv), G v (b + m,)): the loops' rows, then one row per mimic
        coupling (q_m - r q_l - o)."""
        g, jac, gv = super().loop_state(q, v)
        q = self._q(q)
        v = np.zeros(self.nv) if v is None else self._v(v)
        gm, jm, gvm = self._mimic_rows(q, v)
        return np.concatenate((g, gm)), np.vstack((jac, jm)), np.concatenate((gv, gvm))

    def _acceleration_bias(self, q, v):
        """gamma (b + m,): the loops' bias, then zeros (the couplings are linear in q)."""
        return np.concatenate((super()._acceleration_bias(q, v), np.zeros(len(self._mimic_pairs))))

    def analyze(self, q, samples=5, rng=0):
        """ClosedLoopRobot.analyze with the couplings counted as constraint rows (each removes
        one degree of freedom from the Grübler-Kutzbach counts)."""
        import dataclasses
        result = super().analyze(q, samples, rng)
        m = len(self._mimic_pairs)
        rows = result.n_constraints + m
        return dataclasses.replace(
            result, n_constraints=rows, gruebler_kutzbach=result.gruebler_kutzbach - m,
            gruebler_kutzbach_planar=result.gruebler_kutzbach_planar - m,
            redundant_constraints=rows - result.generic_rank,
            statically_determinate=rows == result.generic_rank)

    def forward_dynamics(self, q, v, tau, f_ext=None, out=None, method="recursive", prescribed=None,
                         return_torques=False):
        """qdd (nv,) with the loops closed and the mimic joints coupled (module docstring).

        method "recursive" (default): the closed-loop recursive solver with the coupling forces
        G_m^T mu found by superposition (m + 2 recursive solves: the loop forward dynamics is
        affine in tau); "kkt": one dense KKT solve of every row (minimum norm); "minimal": the
        minimal-coordinate formalism on the same rows. prescribed / return_torques as
        ClosedLoopRobot.forward_dynamics."""
        from .robot import _vector
        if prescribed is not None or method == "minimal":
            return super().forward_dynamics(q, v, tau, f_ext=f_ext, out=out, method=method,
                                            prescribed=prescribed, return_torques=return_torques)
        if method not in ("recursive", "kkt"):
            raise ValueError(f"method {method!r}: with mimic joints in a closed-loop robot the "
                             "methods are 'recursive', 'kkt' and 'minimal'")
        q = self._q(q)
        v = self._v(v)
        tau = _vector(tau, self.nv, "tau")
        with self._lock:
            if method == "recursive":
                try:
                    total = self._coupling_drive(q, v, tau, f_ext)
                except np.linalg.LinAlgError:   # a coupling the loops already impose
                    total = None
                if total is not None:
                    return super().forward_dynamics(q, v, total, f_ext=f_ext, out=out)
            result = self._forward_dynamics_kkt(q, v, tau, f_ext)
        if out is not None:
            out[:] = result
            return out
        return result

    def _coupling_drive(self, q, v, tau, f_ext):
        """tau + G_m^T mu: the drive forces plus the coupling forces that keep every mimic joint
        on its leader. The closed-loop forward dynamics is affine in tau, qdd = a0 + A mu with
        A's columns the responses to the unit coupling forces G_m^T e_k, and the coupling rows
        G_m qdd = -(2 alpha G_m v + beta^2 g_m) give the m x m system for mu."""
        base = super().forward_dynamics(q, v, tau, f_ext=f_ext).copy()
        gm, jm, gvm = self._mimic_rows(q, v)
        m = jm.shape[0]
        response = np.empty((self.nv, m))
        for k in range(m):
            response[:, k] = super().forward_dynamics(q, v, tau + jm[k], f_ext=f_ext)
            response[:, k] -= base
        alpha, beta = self.baumgarte
        target = -(jm @ base) - 2.0 * alpha * gvm - beta * beta * gm
        mu = np.linalg.solve(jm @ response, target)
        return tau + jm.T @ mu

    def _forward_dynamics_kkt(self, q, v, tau, f_ext):
        """One dense KKT solve of the tree with the loop and coupling rows (module docstring)."""
        from .robot import Robot
        mass = Robot.mass_matrix(self, q)
        h = Robot.inverse_dynamics(self, q, v, np.zeros(self.nv), f_ext=f_ext).copy()
        g, jac, gv = self.loop_state(q, v)
        gamma = self._acceleration_bias(q, v)
        alpha, beta = self.baumgarte
        if alpha or beta:   # Baumgarte stabilisation on every row (docs/theory.md §6)
            gamma = gamma + 2.0 * alpha * gv + beta * beta * g
        nv, rows = self.nv, jac.shape[0]
        kkt = np.zeros((nv + rows, nv + rows))
        kkt[:nv, :nv] = mass
        kkt[:nv, nv:] = -jac.T
        kkt[nv:, :nv] = jac
        rhs = np.concatenate((tau - h, -gamma))
        solution = np.linalg.lstsq(kkt, rhs, rcond=None)[0]
        if not np.all(np.isfinite(solution)):
            raise FloatingPointError("forward_dynamics: non-finite accelerations")
        self._thread_state.multipliers = solution[nv:nv + self.n_constraints].copy()
        self.last_rank = int(np.linalg.matrix_rank(jac)) if rows else 0
        return solution[:nv].copy()
