"""Analytic derivatives of the inverse and forward dynamics of a rigid tree.

Carpentier and Mansard, "Analytical Derivatives of Rigid Body Dynamics Algorithms", RSS 2018
[RSS18]: the RNEA differentiated in the root frame, as Pinocchio implements it
(computeRNEADerivatives, rnea-derivatives.hxx; computeABADerivatives), written over the
package's flat model arrays (model/layout.py) and in its conventions (kernels/rnea.py,
kernels/kinematics.py): spatial vectors [linear; angular], the universe accelerating by -g.
The comments cite the equations (D1)-(D8) below, which restate [RSS18]'s in this notation.

The recursion works in the root ("world", o) frame, where a tangent perturbation dq_j of joint j
(q (+) dq, the exponential map of robot.integrate, as Pinocchio's) moves the whole subtree of j
rigidly by the world motion column s = oS_j (every joint's S_j is constant in its body frame,
kernels/kinematics.py). The RNEA in the root frame:

(D1) ov_i = ov_p + oS_i v_i
(D2) oa_i = oa_p + oS_i qdd_i + ov_i x oS_i v_i,  oa_0 = -g
(D3) of_i = oI_i oa_i + ov_i x* oI_i ov_i - of^ext_i;  F_i = sum of of_k over the subtree of i;
     tau_i = oS_i^T F_i (+ the passive joint forces)

The columns of joint j (parent p):

(D4) dV/dq_j = ov_p x oS_j,  dA/dq_j = oa_p x oS_j + ov_p x dV/dq_j,
     dA/dv_j = dV/dq_j + ov_j x oS_j

and the variation of body k's inertia (Pinocchio's doYcrb), such that a velocity change dv that
is not a rigid rotation changes of_k by oI_k da + B_k dv:

(D5) B_k = ov_k x* oI_k - oI_k (ov_k x) + (. x* oI_k ov_k)

With the subtree sums Ycrb_i = sum oI_k and dYcrb_i = sum B_k, for j an ancestor of i or i
itself (the rigid part of the subtree's motion cancels in tau_i = oS_i^T F_i):

(D6) dtau_i/dq_j = oS_i^T (Ycrb_i dA/dq_j + dYcrb_i dV/dq_j)
     dtau_i/dv_j = oS_i^T (Ycrb_i dA/dv_j + dYcrb_i oS_j)

and for j a strict descendant of i (the subtree of j moves under i's fixed axis):

(D7) dtau_i/dq_j = oS_i^T (Ycrb_j dA/dq_j + dYcrb_j dV/dq_j + oS_j x* F_j)
     dtau_i/dv_j = oS_i^T (Ycrb_j dA/dv_j + dYcrb_j oS_j)
     dtau_i/dqdd_j = oS_i^T Ycrb_j oS_j = M_ij

External wrenches (work[:, FEXT], body frame) are carried by their body (follower loads, as
forward_dynamics applies them): they enter only through F_j in the oS_j x* F_j term. The joint
damping and smoothed friction of the tree add d/dv (b v + f tanh(v / v_s)) on the diagonal.
Cost O(nv * depth), as [RSS18]'s.

Forward dynamics ([RSS18]'s route):

(D8) qdd = FD(q, v, tau);  dqdd/dx = -M^-1 dtau/dx (x = q, v) at that qdd;  dqdd/dtau = M^-1

with M factorised as L^T D L along the tree's sparsity (Featherstone's RBDA, Tables 6.3-6.4:
the LTDL factorisation and its back-substitutions). qdd comes from the same factor, not from a
separate ABA: M, dtau/dv and the bias tau_b = ID(q, v, 0) do not depend on qdd, and what does
is linear in it (acc_i: the accelerations qdd adds; D2, D4 and D3 with oa_0 = -g unchanged):

(D9) qdd = M^-1 (tau - tau_b);  acc_i = acc_p + oS_i qdd_i;  oa_i += acc_i;
     dA/dq_j += acc_p x oS_j;  of_i += oI_i acc_i

Workspaces (per robot, built once: robot/derivatives.py): `dwork` (nb + 1, DWORK_WIDTH) per body,
`dof_work` (nv, DOF_WIDTH) per degree of freedom, `dof_int` (nv, DOF_INT_WIDTH) the tree's dof
structure, `factor` (nv, nv) the L^T D L factor. Kernels never raise: they return a status code
(layout.STATUS_*). The two entry kernels have explicit signatures (kernels/entry.py): a call with
other argument types raises TypeError (the facade then converts its inputs) instead of
compiling another specialisation.
"""
import math

import numpy as np
from numba import njit, types, uint64

from . import signatures
from .entry import entry_point

from ..model.layout import (ACC, DAMPING, FEXT, FRICTION, FRICTION_SPEED, GRAVITY, IDX_Q, IDX_V,
                            JOINT_NV_COL, JOINT_REVOLUTE, JOINT_TYPE, MOTION_SUBSPACE, PARENT,
                            ROT, SPATIAL_INERTIA, STATUS_OK, STATUS_SHAPE_OUT, STATUS_SINGULAR,
                            SUBTREE_END, TRANSFORM_SCRATCH, WORLD_ROT)
from .kinematics import compose_world_pose, joint_pose, revolute_pose, set_world_root, state_status
from .output_checks import STATUS_NOT_FINITE
from .spatial import (add_cross_force, add_rigid_inertia_to_parent, cross_motion, force_to_parent,
                      rigid_parameters, rigid_parameters_times)

# ---- dwork columns (per body, all in the root frame) ---------------------------------------------
YCRB = 0        # 10: oI_i as rigid-body parameters (m, h = m c, I_o; spatial.rigid_parameters),
                #     then (backward pass) the subtree sum Ycrb_i
VAR_G = 10      # 3: the variation B_i (below) is [[0, -2 [g]], [0, C]]: g = oh_i's linear part
VAR_C = 13      # 9: C (row-major), then the subtree sums of g and C
OV = 22         # 6: ov_i
OA = 28         # 6: oa_i, gravity included (oa_0 = -g)
OF = 34         # 6: of_i, then the subtree sum F_i
OH = 40         # 6: oh_i = oI_i ov_i (the joint's own velocity before that)
TMP = 46        # 10: scratch (forward dynamics: the acceleration acc_i of (D9))
OI = 56         # 10: forward dynamics: oI_i of the body alone (YCRB is summed in place)
FB = 66         # 6: forward dynamics: the subtree sum of of_i at qdd = 0 (the bias forces)
DWORK_WIDTH = 72

# ---- dof_work columns (per dof, root frame) ------------------------------------------------------
S_O = 0         # 6: oS (the world column of the dof: Pinocchio's J)
DVDQ = 6        # 6: dV/dq
DADQ = 12       # 6: dA/dq
DADV = 18       # 6: dA/dv
YS = 24         # 6: Ycrb_i oS (dF/dqdd)
DYT = 30        # 3: the angular part of dYcrb_i^T oS (its linear part is 0)
DFDQ = 36       # 6: Ycrb_i dA/dq + dYcrb_i dV/dq
DFDV = 42       # 6: Ycrb_i dA/dv + dYcrb_i oS
DFDQ_BELOW = 48  # 6: DFDQ + oS x* F_i (the column as the ancestors' rows see it)
DOF_WIDTH = 54

# ---- dof_int columns -----------------------------------------------------------------------------
DOF_BODY = 0    # body that owns the dof
DOF_PARENT = 1  # the previous dof on the path to the root (lambda(k) of RBDA §6.5), -1 at the root
DOF_SUBTREE_END = 2  # one past the last dof of the subtree of the dof (dofs are depth-first)
DOF_INT_WIDTH = 3


@njit(inline="always")
def motion_to_world(pose, pi, pc, m, mi, mc, out, oi, oc):
    """out (6) = oX_i m: a body-frame motion vector in the root frame, with the body's world pose
    (R, p) at pose[pi, pc:pc+12]: w_o = R w, v_o = R v + p x w_o."""
    v0 = m[mi, mc]
    v1 = m[mi, mc + 1]
    v2 = m[mi, mc + 2]
    w0 = m[mi, mc + 3]
    w1 = m[mi, mc + 4]
    w2 = m[mi, mc + 5]
    px = pose[pi, pc + 9]
    py = pose[pi, pc + 10]
    pz = pose[pi, pc + 11]
    ox = pose[pi, pc] * w0 + pose[pi, pc + 1] * w1 + pose[pi, pc + 2] * w2
    oy = pose[pi, pc + 3] * w0 + pose[pi, pc + 4] * w1 + pose[pi, pc + 5] * w2
    oz = pose[pi, pc + 6] * w0 + pose[pi, pc + 7] * w1 + pose[pi, pc + 8] * w2
    out[oi, oc] = (pose[pi, pc] * v0 + pose[pi, pc + 1] * v1 + pose[pi, pc + 2] * v2
                   + py * oz - pz * oy)
    out[oi, oc + 1] = (pose[pi, pc + 3] * v0 + pose[pi, pc + 4] * v1 + pose[pi, pc + 5] * v2
                       + pz * ox - px * oz)
    out[oi, oc + 2] = (pose[pi, pc + 6] * v0 + pose[pi, pc + 7] * v1 + pose[pi, pc + 8] * v2
                       + px * oy - py * ox)
    out[oi, oc + 3] = ox
    out[oi, oc + 4] = oy
    out[oi, oc + 5] = oz


@njit(inline="always")
def dot6(a, ai, ac, b, bi, bc):
    """a[ai, ac:ac+6] . b[bi, bc:bc+6]"""
    return (a[ai, ac] * b[bi, bc] + a[ai, ac + 1] * b[bi, bc + 1] + a[ai, ac + 2] * b[bi, bc + 2]
            + a[ai, ac + 3] * b[bi, bc + 3] + a[ai, ac + 4] * b[bi, bc + 4]
            + a[ai, ac + 5] * b[bi, bc + 5])


@njit(inline="always")
def load6(a, ai, ac):
    """The six numbers a[ai, ac:ac+6] as a tuple (held in registers)."""
    return (a[ai, ac], a[ai, ac + 1], a[ai, ac + 2], a[ai, ac + 3], a[ai, ac + 4],
            a[ai, ac + 5])


@njit(inline="always")
def inertia_variation(dwork, i):
    """The variation B_i = ov x* oI - oI (ov x) + (. x* oh) of body i, oh = oI ov (D5);
    Pinocchio's Inertia::variation + addForceCrossMatrix, so that d of_i = oI_i da + B_i dv for
    a velocity change dv that is not a rigid rotation. With oI = [[m, -[h]], [[h], I_o]] and
    ov = [v; w], oh = [f; n], its blocks are (from [a][b] = b a^T - (a.b) 1 and
    [a][b] - [b][a] = [a x b])

        B = [[0, -2 [f]], [0, C]],  C = 2 (v.h) 1 - (h v^T + v h^T) + [w] I_o - I_o [w] - [n]

    stored as g = f (VAR_G) and C (VAR_C): 12 numbers that add over a subtree."""
    m = dwork[i, YCRB]
    hx = dwork[i, YCRB + 1]
    hy = dwork[i, YCRB + 2]
    hz = dwork[i, YCRB + 3]
    vx = dwork[i, OV]
    vy = dwork[i, OV + 1]
    vz = dwork[i, OV + 2]
    wx = dwork[i, OV + 3]
    wy = dwork[i, OV + 4]
    wz = dwork[i, OV + 5]
    for r in range(3):
        dwork[i, VAR_G + r] = dwork[i, OH + r]
    # P = [w] I_o (I_o symmetric from its six parameters); [w] I_o - I_o [w] = P + P^T
    i00 = dwork[i, YCRB + 4]
    i01 = dwork[i, YCRB + 5]
    i02 = dwork[i, YCRB + 6]
    i11 = dwork[i, YCRB + 7]
    i12 = dwork[i, YCRB + 8]
    i22 = dwork[i, YCRB + 9]
    p00 = wy * i02 - wz * i01
    p01 = wy * i12 - wz * i11
    p02 = wy * i22 - wz * i12
    p10 = wz * i00 - wx * i02
    p11 = wz * i01 - wx * i12
    p12 = wz * i02 - wx * i22
    p20 = wx * i01 - wy * i00
    p21 = wx * i11 - wy * i01
    p22 = wx * i12 - wy * i02
    vh = 2.0 * (vx * hx + vy * hy + vz * hz)
    nx = dwork[i, OH + 3]
    ny = dwork[i, OH + 4]
    nz = dwork[i, OH + 5]
    dwork[i, VAR_C] = vh - 2.0 * hx * vx + 2.0 * p00
    dwork[i, VAR_C + 1] = -(hx * vy + vx * hy) + p01 + p10 + nz
    dwork[i, VAR_C + 2] = -(hx * vz + vx * hz) + p02 + p20 - ny
    dwork[i, VAR_C + 3] = -(hy * vx + vy * hx) + p10 + p01 - nz
    dwork[i, VAR_C + 4] = vh - 2.0 * hy * vy + 2.0 * p11
    dwork[i, VAR_C + 5] = -(hy * vz + vy * hz) + p12 + p21 + nx
    dwork[i, VAR_C + 6] = -(hz * vx + vz * hx) + p20 + p02 + ny
    dwork[i, VAR_C + 7] = -(hz * vy + vz * hy) + p21 + p12 - nx
    dwork[i, VAR_C + 8] = vh - 2.0 * hz * vz + 2.0 * p22
    return m


@njit(inline="always")
def variation_times(dwork, i, x, xi, xc, out, oi, oc):
    """out (6) += B x = [-2 g x x_ang; C x_ang] for the variation (g, C) at dwork[i]."""
    ax = x[xi, xc + 3]
    ay = x[xi, xc + 4]
    az = x[xi, xc + 5]
    gx = dwork[i, VAR_G]
    gy = dwork[i, VAR_G + 1]
    gz = dwork[i, VAR_G + 2]
    out[oi, oc] -= 2.0 * (gy * az - gz * ay)
    out[oi, oc + 1] -= 2.0 * (gz * ax - gx * az)
    out[oi, oc + 2] -= 2.0 * (gx * ay - gy * ax)
    for r in range(3):
        out[oi, oc + 3 + r] += (dwork[i, VAR_C + 3 * r] * ax + dwork[i, VAR_C + 3 * r + 1] * ay
                                + dwork[i, VAR_C + 3 * r + 2] * az)


@njit(inline="always")
def dyt_column(dwork, i, dof_work, jc):
    """dof_work[jc, DYT] = the angular part of dYcrb_i^T oS_jc (its linear part is 0) for the
    subtree sums (g, C) of the variations at dwork[i]: B^T s = [0; 2 g x s_lin + C^T s_ang]."""
    sx = dof_work[jc, S_O]
    sy = dof_work[jc, S_O + 1]
    sz = dof_work[jc, S_O + 2]
    gx = dwork[i, VAR_G]
    gy = dwork[i, VAR_G + 1]
    gz = dwork[i, VAR_G + 2]
    dof_work[jc, DYT] = 2.0 * (gy * sz - gz * sy)
    dof_work[jc, DYT + 1] = 2.0 * (gz * sx - gx * sz)
    dof_work[jc, DYT + 2] = 2.0 * (gx * sy - gy * sx)
    for r in range(3):
        dof_work[jc, DYT + r] += (dwork[i, VAR_C + r] * dof_work[jc, S_O + 3]
                                  + dwork[i, VAR_C + 3 + r] * dof_work[jc, S_O + 4]
                                  + dwork[i, VAR_C + 6 + r] * dof_work[jc, S_O + 5])


@njit(inline="always")
def forward_pass(body_int, body_float, work, dwork, dof_work, q, v, qdd):
    """Base -> tips: the world poses, oS, ov, oa, of, oI, oh, the variations B and the columns
    dV/dq, dA/dq, dA/dv of every dof at (q, v, qdd)  [(D1)-(D5)]."""
    nb = body_int.shape[0] - 1
    set_world_root(work)
    for k in range(6):
        dwork[0, OV + k] = 0.0
        dwork[0, OA + k] = 0.0
    for k in range(3):
        dwork[0, OA + k] = -body_float[0, GRAVITY + k]
    # ---- forward pass, base -> tips: world kinematics, columns, body wrenches  [(D1)-(D5)]
    for i in range(1, nb + 1):
        parent = body_int[i, PARENT]
        nv_joint = body_int[i, JOINT_NV_COL]
        iv = body_int[i, IDX_V]
        joint_type = body_int[i, JOINT_TYPE]
        if joint_type == JOINT_REVOLUTE:
            revolute_pose(body_float, i, q[body_int[i, IDX_Q]], work, i, ROT)
        else:
            joint_pose(joint_type, body_float, i, q, body_int[i, IDX_Q], work, i, ROT,
                       TRANSFORM_SCRATCH)
        compose_world_pose(work, i, parent)
        # oS_i, and the joint's own velocity oS_i v_i (kept in OH until the inertia is moved)
        for r in range(6):
            dwork[i, OH + r] = 0.0
        for c in range(nv_joint):
            jc = iv + c
            motion_to_world(work, i, WORLD_ROT, body_float, i, MOTION_SUBSPACE + 6 * c,
                            dof_work, jc, S_O)
            for r in range(6):
                dwork[i, OH + r] += dof_work[jc, S_O + r] * v[jc]
        # ov_i = ov_p + oS_i v_i                                          (D1)
        for r in range(6):
            dwork[i, OV + r] = dwork[parent, OV + r] + dwork[i, OH + r]
        # oa_i = oa_p + oS_i qdd_i + ov_i x oS_i v_i                        (D2)
        cross_motion(dwork, i, OV, dwork, i, OH, dwork, i, OA)
        for r in range(6):
            s = dwork[parent, OA + r] + dwork[i, OA + r]
            for c in range(nv_joint):
                s += dof_work[iv + c, S_O + r] * qdd[iv + c]
            dwork[i, OA + r] = s
        # dV/dq = ov_p x oS,  dA/dq = oa_p x oS + ov_p x dV/dq,  dA/dv = dV/dq + ov_i x oS
        #                                                  (D4) (Pinocchio's J, dJ)
        for c in range(nv_joint):
            jc = iv + c
            cross_motion(dwork, parent, OV, dof_work, jc, S_O, dof_work, jc, DVDQ)
            cross_motion(dwork, parent, OA, dof_work, jc, S_O, dof_work, jc, DADQ)
            cross_motion(dwork, parent, OV, dof_work, jc, DVDQ, dof_work, jc, DADV)
            for r in range(6):
                dof_work[jc, DADQ + r] += dof_work[jc, DADV + r]
            cross_motion(dwork, i, OV, dof_work, jc, S_O, dof_work, jc, DADV)
            for r in range(6):
                dof_work[jc, DADV + r] += dof_work[jc, DVDQ + r]
        # oI_i = oX_i^* I_i oX_i^-1, as rigid-body parameters
        rigid_parameters(body_float, i, SPATIAL_INERTIA, dwork, i, TMP)
        for k in range(10):
            dwork[i, YCRB + k] = 0.0
        add_rigid_inertia_to_parent(work, i, WORLD_ROT, dwork, i, TMP, dwork, i, YCRB)
        # oh = oI ov;  of = oI oa + ov x* oh - oX^* f^ext                  (D3)
        rigid_parameters_times(dwork, i, YCRB, dwork, i, OV, dwork, i, OH)
        rigid_parameters_times(dwork, i, YCRB, dwork, i, OA, dwork, i, OF)
        add_cross_force(dwork, i, OV, dwork, i, OH, dwork, i, OF)
        # (a body without a load skips the move: of_i - 0 is of_i exactly; the C-level path
        # has no loads at all; NaN != 0 keeps a NaN load)
        if (work[i, FEXT] != 0.0 or work[i, FEXT + 1] != 0.0 or work[i, FEXT + 2] != 0.0
                or work[i, FEXT + 3] != 0.0 or work[i, FEXT + 4] != 0.0
                or work[i, FEXT + 5] != 0.0):
            for r in range(6):
                dwork[i, TMP + r] = work[i, FEXT + r]
            force_to_parent(work, i, WORLD_ROT, dwork, i, TMP)
            for r in range(6):
                dwork[i, OF + r] -= dwork[i, TMP + r]
        inertia_variation(dwork, i)


DERIVATIVE_ARRAYS = (signatures.MODEL_INT, signatures.MODEL_FLOAT, signatures.WORK, signatures.WORK,
                     signatures.WORK, signatures.MODEL_INT)
RNEA_DERIVATIVES = types.int64(*DERIVATIVE_ARRAYS, *(signatures.VECTOR,) * 4,
                               *(signatures.MATRIX,) * 3)
ABA_DERIVATIVES = types.int64(*DERIVATIVE_ARRAYS, signatures.MATRIX, *(signatures.VECTOR,) * 5,
                              *(signatures.MATRIX,) * 3)


@entry_point(RNEA_DERIVATIVES)
def rnea_derivatives(body_int, body_float, work, dwork, dof_work, dof_int, q, v, qdd, tau_out,
                     dq_out, dv_out, da_out):
    """tau (nv,) = ID(q, v, qdd) and its partial derivatives dq_out = dtau/dq (tangent space),
    dv_out = dtau/dv, da_out = dtau/dqdd = M, each (nv, nv) [RSS18; (D1)-(D7)].

    Model: body_int, body_float. Data: work (poses; FEXT read: the loads, body frame), dwork,
    dof_work; dof_int the dof structure. Outputs must not overlap the inputs (the facade passes
    its own arrays). Returns a status code; never raises.
    """
    status = state_status(body_int, q, v, qdd, True, True)
    if status != STATUS_OK:
        return status
    nv = v.shape[0]
    if (tau_out.shape[0] != nv or dq_out.shape[0] != nv or dq_out.shape[1] != nv
            or dv_out.shape[0] != nv or dv_out.shape[1] != nv or da_out.shape[0] != nv
            or da_out.shape[1] != nv):
        return STATUS_SHAPE_OUT
    nb = body_int.shape[0] - 1
    for r in range(nv):
        for c in range(nv):
            dq_out[r, c] = 0.0
            dv_out[r, c] = 0.0
            da_out[r, c] = 0.0
    forward_pass(body_int, body_float, work, dwork, dof_work, q, v, qdd)
    # ---- backward pass, tips -> base: subtree sums and the matrices' entries  [(D6)-(D7)]
    for i in range(nb, 0, -1):
        parent = body_int[i, PARENT]
        nv_joint = body_int[i, JOINT_NV_COL]
        iv = body_int[i, IDX_V]
        for c in range(nv_joint):
            jc = iv + c
            tau_out[jc] = dot6(dof_work, jc, S_O, dwork, i, OF)
            # dF/dqdd = Ycrb oS,  dYcrb^T oS (angular part: the linear one is 0),
            # dF/dq = Ycrb dA/dq + dYcrb dV/dq,  dF/dv = Ycrb dA/dv + dYcrb oS  (D6)-(D7)
            rigid_parameters_times(dwork, i, YCRB, dof_work, jc, S_O, dof_work, jc, YS)
            rigid_parameters_times(dwork, i, YCRB, dof_work, jc, DADQ, dof_work, jc, DFDQ)
            variation_times(dwork, i, dof_work, jc, DVDQ, dof_work, jc, DFDQ)
            rigid_parameters_times(dwork, i, YCRB, dof_work, jc, DADV, dof_work, jc, DFDV)
            variation_times(dwork, i, dof_work, jc, S_O, dof_work, jc, DFDV)
            dyt_column(dwork, i, dof_work, jc)
            # the column as the ancestors' rows see it: + oS x* F_i        (D7)
            for r in range(6):
                dof_work[jc, DFDQ_BELOW + r] = dof_work[jc, DFDQ + r]
            add_cross_force(dof_work, jc, S_O, dwork, i, OF, dof_work, jc, DFDQ_BELOW)
        for c in range(nv_joint):
            jc = iv + c
            # rows of this joint, columns of this joint
            for m in range(nv_joint):
                jm = iv + m
                dq_out[jm, jc] = dot6(dof_work, jm, S_O, dof_work, jc, DFDQ)
                dv_out[jm, jc] = dot6(dof_work, jm, S_O, dof_work, jc, DFDV)
                da_out[jm, jc] = dot6(dof_work, jm, S_O, dof_work, jc, YS)
            # passive joint forces: d/dv (b v + f tanh(v / v_s))
            damping = body_float[i, DAMPING + c]
            friction = body_float[i, FRICTION + c]
            if damping != 0.0 or friction != 0.0:
                speed = body_float[i, FRICTION_SPEED]
                th = math.tanh(v[jc] / speed)
                tau_out[jc] += damping * v[jc] + friction * th
                dv_out[jc, jc] += damping + friction * (1.0 - th * th) / speed
            # ancestors: rows k above (column jc), and row jc's entries in the columns k above
            # the column's vectors in locals: the stores into the matrices may alias dof_work
            # as far as the compiler knows, which would reload them for every ancestor
            b0, b1, b2, b3, b4, b5 = load6(dof_work, jc, DFDQ_BELOW)
            f0, f1, f2, f3, f4, f5 = load6(dof_work, jc, DFDV)
            y0, y1, y2, y3, y4, y5 = load6(dof_work, jc, YS)
            t0 = dof_work[jc, DYT]
            t1 = dof_work[jc, DYT + 1]
            t2 = dof_work[jc, DYT + 2]
            k = dof_int[iv, DOF_PARENT]
            while k >= 0:
                row = dof_work[k]
                dq_out[k, jc] = (row[S_O] * b0 + row[S_O + 1] * b1 + row[S_O + 2] * b2
                                 + row[S_O + 3] * b3 + row[S_O + 4] * b4 + row[S_O + 5] * b5)
                dv_out[k, jc] = (row[S_O] * f0 + row[S_O + 1] * f1 + row[S_O + 2] * f2
                                 + row[S_O + 3] * f3 + row[S_O + 4] * f4 + row[S_O + 5] * f5)
                mass = (row[S_O] * y0 + row[S_O + 1] * y1 + row[S_O + 2] * y2
                        + row[S_O + 3] * y3 + row[S_O + 4] * y4 + row[S_O + 5] * y5)
                da_out[k, jc] = mass
                da_out[jc, k] = mass
                dq_out[jc, k] = (y0 * row[DADQ] + y1 * row[DADQ + 1] + y2 * row[DADQ + 2]
                                 + y3 * row[DADQ + 3] + y4 * row[DADQ + 4] + y5 * row[DADQ + 5]
                                 + (t0 * row[DVDQ + 3] + t1 * row[DVDQ + 4]
                                    + t2 * row[DVDQ + 5]))
                dv_out[jc, k] = (y0 * row[DADV] + y1 * row[DADV + 1] + y2 * row[DADV + 2]
                                 + y3 * row[DADV + 3] + y4 * row[DADV + 4] + y5 * row[DADV + 5]
                                 + (t0 * row[S_O + 3] + t1 * row[S_O + 4] + t2 * row[S_O + 5]))
                k = dof_int[k, DOF_PARENT]
        if parent > 0:
            for k in range(22):   # YCRB, VAR_G, VAR_C
                dwork[parent, YCRB + k] += dwork[i, YCRB + k]
            for r in range(6):
                dwork[parent, OF + r] += dwork[i, OF + r]
    if not (finite_matrix(dq_out) and finite_matrix(dv_out)):
        return STATUS_NOT_FINITE
    return STATUS_OK


@njit(inline="always")
def finite_matrix(x):
    """True when every entry of x (2-D, C-contiguous rows) is finite: x * 0 is 0 for a finite x
    and NaN otherwise. Four running sums: one sum is a serial chain of additions (not reordered
    without fastmath), four run in parallel (~3x faster on a 38 x 38 matrix)."""
    a0 = 0.0
    a1 = 0.0
    a2 = 0.0
    a3 = 0.0
    n = x.shape[1]
    for r in range(x.shape[0]):
        row = x[r]
        c = 0
        while c + 4 <= n:
            a0 += row[c] * 0.0
            a1 += row[c + 1] * 0.0
            a2 += row[c + 2] * 0.0
            a3 += row[c + 3] * 0.0
            c += 4
        while c < n:
            a0 += row[c] * 0.0
            c += 1
    return a0 + a1 + a2 + a3 == 0.0


PIVOT_RTOL = 1e-13   # as the ABA's test of its joint-space articulated inertia (kernels/aba.py)


@njit(inline="always")
def fill_dof_int(body_int, dof_int):
    """dof_int (nv, DOF_INT_WIDTH): for every dof its body, the previous dof on its path to the
    root (the joint's own previous axis, else the parent joint's last one; -1 at the root) and
    one past the last dof of its subtree (bodies are numbered depth-first: layout.SUBTREE_END)."""
    nb = body_int.shape[0] - 1
    for i in range(1, nb + 1):
        iv = body_int[i, IDX_V]
        parent = body_int[i, PARENT]
        last = body_int[i, SUBTREE_END] - 1   # the subtree's last body
        end = body_int[last, IDX_V] + body_int[last, JOINT_NV_COL]
        for c in range(body_int[i, JOINT_NV_COL]):
            dof_int[iv + c, DOF_BODY] = i
            dof_int[iv + c, DOF_SUBTREE_END] = end
            if c > 0:
                dof_int[iv + c, DOF_PARENT] = iv + c - 1
            elif parent > 0:
                dof_int[iv, DOF_PARENT] = (body_int[parent, IDX_V]
                                           + body_int[parent, JOINT_NV_COL] - 1)
            else:
                dof_int[iv, DOF_PARENT] = -1


@njit(cache=True)
def dof_structure_into(body_int, dof_int):
    """fill_dof_int, compiled (robot/derivatives.dof_structure)."""
    fill_dof_int(body_int, dof_int)


@njit(cache=True)
def tree_ltdl(dof_int, mass, factor):
    """factor = M (nv, nv) factorised as L^T D L along the tree (RBDA Table 6.3): D on the
    diagonal, L's strict lower entries at (k, ancestor k' of k). Returns -1, or the dof whose
    pivot D_k is not above PIVOT_RTOL M_kk (M singular or not positive definite: the ABA's
    joint-space articulated inertia, which D_k is, singular by its relative test)."""
    n = mass.shape[0]
    for r in range(n):
        for c in range(n):
            factor[r, c] = mass[r, c]
    for k in range(n - 1, -1, -1):
        if not factor[k, k] > PIVOT_RTOL * mass[k, k]:
            return k
        i = dof_int[k, DOF_PARENT]
        while i >= 0:
            a = factor[k, i] / factor[k, k]
            j = i
            while j >= 0:
                factor[i, j] -= a * factor[k, j]
                j = dof_int[j, DOF_PARENT]
            factor[k, i] = a
            i = dof_int[i, DOF_PARENT]
    return -1


# the columns a solve's first walk (L^-T) must touch in row i, by what x is on entry:
ALL_COLUMNS = 0     # any x
TREE_COLUMNS = 1    # x with M's sparsity (row i nonzero only in the ancestors and the subtree of
                    # i, as the inverse dynamics' derivatives): L^-T x keeps it, so [0, end)
IDENTITY = 2        # x = 1: L^-T 1 is zero outside the ancestors of each column: [i, end)


# from this nv on, the solves' row updates run over unsigned indices (sub_scaled_row): numba
# wraps a negative signed index around (index + size), a test in every iteration that keeps
# LLVM from vectorising a loop whose start is not 0; with unsigned indices it vectorises them.
# Measured per solve (bench/profile_derivatives.py): talos_reduced (nv 38) 7.5 -> 3.4 us
# (dtau/dq), 3.4 -> 2.2 us (M^-1); solo12 1.35 -> 0.72; panda (nv 9) 0.31 -> 0.23; ur5 (nv 6)
# 0.147 -> 0.171 (rows of at most 6: the vector loop's setup costs more), hence the bound
WIDE_ROWS_FROM = 8


@njit(inline="always")
def sub_scaled_row(y, x, f, start, end):
    """y[start:end] -= f x[start:end] for rows y, x (1-D, contiguous), over unsigned indices
    (WIDE_ROWS_FROM: the loop vectorises)."""
    for c in range(uint64(start), uint64(end)):
        y[c] -= f * x[c]


@njit(cache=True)
def ltdl_solve(dof_int, factor, x, scale, columns):
    """x <- scale M^-1 x for x (nv, nv), with M = L^T D L in `factor` (RBDA Table 6.4), on whole
    contiguous rows (row views: the row updates vectorise, from WIDE_ROWS_FROM dofs on).
    columns: what x is on entry (ALL_COLUMNS, TREE_COLUMNS, IDENTITY): the first walk touches
    only the columns that can be nonzero, [start, end) of row i; the last walk (L^-1) fills
    every column (IDENTITY: the upper triangle, then mirrored).
    (One matrix per walk: walking three at once was up to 3x slower, depending on where the
    arrays fall in memory. A compiled function, not inlined: three inlined copies made
    aba_derivatives ~15% slower on ur5.)"""
    n = factor.shape[0]
    wide = n >= WIDE_ROWS_FROM
    for i in range(n - 1, -1, -1):       # L^-T
        j = dof_int[i, DOF_PARENT]
        start = i if columns == IDENTITY else 0
        end = n if columns == ALL_COLUMNS else dof_int[i, DOF_SUBTREE_END]
        row_i = x[i]
        while j >= 0:
            f = factor[i, j]
            row_j = x[j]
            if wide:
                sub_scaled_row(row_j, row_i, f, start, end)
            else:
                for c in range(start, end):
                    row_j[c] -= f * row_i[c]
            j = dof_int[j, DOF_PARENT]
    # identity: the result is symmetric, and its upper triangle (c >= i) needs only the upper
    # triangles of the rows above (j < i <= c): compute it, then mirror it
    for i in range(n):                   # D^-1
        d = scale / factor[i, i]
        row_i = x[i]
        for c in range(uint64(i if columns == IDENTITY else 0), uint64(n)):
            row_i[c] *= d
    for i in range(n):                   # L^-1
        j = dof_int[i, DOF_PARENT]
        start = i if columns == IDENTITY else 0
        row_i = x[i]
        while j >= 0:
            f = factor[i, j]
            row_j = x[j]
            if wide:
                sub_scaled_row(row_i, row_j, f, start, n)
            else:
                for c in range(start, n):
                    row_i[c] -= f * row_j[c]
            j = dof_int[j, DOF_PARENT]
    if columns == IDENTITY:
        for i in range(n):
            for c in range(i):
                x[i, c] = x[c, i]


@njit(inline="always")
def ltdl_solve_vector(dof_int, factor, x):
    """x <- M^-1 x for a vector x (nv,), M = L^T D L in `factor` (RBDA Table 6.4)."""
    n = factor.shape[0]
    for i in range(n - 1, -1, -1):       # L^-T
        j = dof_int[i, DOF_PARENT]
        while j >= 0:
            x[j] -= factor[i, j] * x[i]
            j = dof_int[j, DOF_PARENT]
    for i in range(n):                   # D^-1, L^-1
        x[i] /= factor[i, i]
    for i in range(n):
        j = dof_int[i, DOF_PARENT]
        while j >= 0:
            x[i] -= factor[i, j] * x[j]
            j = dof_int[j, DOF_PARENT]


@njit(cache=True)
def forward_from_inverse(dof_int, factor, dq, dv, mass):
    """dq <- -M^-1 dq, dv <- -M^-1 dv, mass (M on entry) <- M^-1: the forward dynamics'
    derivatives from the inverse dynamics' at qdd = FD(q, v, tau) (D8).
    Returns STATUS_OK, or STATUS_SINGULAR + the body of a non-positive pivot."""
    nv = mass.shape[0]
    bad = tree_ltdl(dof_int, mass, factor)
    if bad >= 0:
        return STATUS_SINGULAR + dof_int[bad, DOF_BODY]
    for r in range(nv):
        for c in range(nv):
            mass[r, c] = 1.0 if r == c else 0.0
    ltdl_solve(dof_int, factor, dq, -1.0, ALL_COLUMNS)   # force elements may fill them
    ltdl_solve(dof_int, factor, dv, -1.0, ALL_COLUMNS)
    ltdl_solve(dof_int, factor, mass, 1.0, IDENTITY)
    if not (finite_matrix(dq) and finite_matrix(dv) and finite_matrix(mass)):
        return STATUS_NOT_FINITE
    return STATUS_OK


# from this nv on, dqdd/dx = -M^-1 dtau/dx by M^-1 and dense products (BLAS dgemm, fully
# vectorised, does nv^3 operations where the tree solves do ~2 nv sum(depth) row updates):
# measured per matrix 0.63 vs 0.78 us on solo12 (nv 18), the same on talos_reduced (nv 38);
# on panda (nv 9) the two were equal; the arms keep the solves (no BLAS call)
DENSE_PRODUCTS_FROM = 16


@entry_point(ABA_DERIVATIVES)
def aba_derivatives(body_int, body_float, work, dwork, dof_work, dof_int, factor, q, v, tau,
                    qdd_out, tau_scratch, dq_out, dv_out, dtau_out):
    """qdd_out = FD(q, v, tau) (loads in work[:, FEXT], passive forces included) and its partial
    derivatives: dq_out = dqdd/dq (tangent space), dv_out = dqdd/dv, dtau_out = dqdd/dtau = M^-1,
    each (nv, nv): dqdd/dx = -M^-1 dtau/dx of the inverse dynamics at (q, v, qdd) (D8).

    No separate ABA: the inverse dynamics' derivatives split into what does not depend on qdd
    (poses, velocities, M, dtau/dv, the bias forces: forward pass at qdd = 0, backward pass B),
    then qdd from M's L^T D L factor, then what does (D9): a forward pass C adding
    acc_i = acc_p + oS_i qdd_i to oa_i and acc_p x oS_j to dA/dq_j, and of_i += oI_i acc_i, and a
    backward pass D for tau and dtau/dq. The factor serves the three solves.
    tau_scratch (nv,) receives the bias tau_b = ID(q, v, 0) + passive forces.
    Returns a status code (layout.STATUS_SINGULAR + body when M is singular); never raises."""
    nv = v.shape[0]
    for k in range(min(nv, qdd_out.shape[0])):
        qdd_out[k] = 0.0
    status = state_status(body_int, q, v, tau, True, True)
    if status != STATUS_OK:
        return status
    if (qdd_out.shape[0] != nv or tau_scratch.shape[0] != nv or factor.shape[0] != nv
            or factor.shape[1] != nv or dq_out.shape[0] != nv or dq_out.shape[1] != nv
            or dv_out.shape[0] != nv or dv_out.shape[1] != nv or dtau_out.shape[0] != nv
            or dtau_out.shape[1] != nv):
        return STATUS_SHAPE_OUT
    nb = body_int.shape[0] - 1
    for r in range(nv):
        for c in range(nv):
            dq_out[r, c] = 0.0
            dv_out[r, c] = 0.0
            dtau_out[r, c] = 0.0
    # Passes B and D write -dtau/dv into neg_dv and -dtau/dq into neg_dq (the sign is free in
    # their dot products). Tree solves: in place (dv_out, dq_out). Dense products: into arrays
    # the products do not write, so that dgemm writes -M^-1 dtau/dx straight into the outputs
    # (no copy): dq_out until the last product, factor once M^-1 is computed (before pass D).
    dense = nv >= DENSE_PRODUCTS_FROM
    neg_dv = dq_out if dense else dv_out
    neg_dq = factor if dense else dq_out
    # ---- forward pass A at qdd = 0 (qdd_out is zero)                              [(D1)-(D5)]
    forward_pass(body_int, body_float, work, dwork, dof_work, q, v, qdd_out)
    for i in range(1, nb + 1):
        for k in range(10):
            dwork[i, OI + k] = dwork[i, YCRB + k]
        for r in range(6):
            dwork[i, FB + r] = dwork[i, OF + r]
    # ---- backward pass B: subtree sums, the bias tau_b, M, dtau/dv                [(D6)-(D7)]
    for i in range(nb, 0, -1):
        parent = body_int[i, PARENT]
        nv_joint = body_int[i, JOINT_NV_COL]
        iv = body_int[i, IDX_V]
        for c in range(nv_joint):
            jc = iv + c
            tau_scratch[jc] = dot6(dof_work, jc, S_O, dwork, i, FB)
            rigid_parameters_times(dwork, i, YCRB, dof_work, jc, S_O, dof_work, jc, YS)
            rigid_parameters_times(dwork, i, YCRB, dof_work, jc, DADV, dof_work, jc, DFDV)
            variation_times(dwork, i, dof_work, jc, S_O, dof_work, jc, DFDV)
            dyt_column(dwork, i, dof_work, jc)
        for c in range(nv_joint):
            jc = iv + c
            for m in range(nv_joint):
                jm = iv + m
                neg_dv[jm, jc] = -dot6(dof_work, jm, S_O, dof_work, jc, DFDV)
                dtau_out[jm, jc] = dot6(dof_work, jm, S_O, dof_work, jc, YS)
            damping = body_float[i, DAMPING + c]
            friction = body_float[i, FRICTION + c]
            if damping != 0.0 or friction != 0.0:
                speed = body_float[i, FRICTION_SPEED]
                th = math.tanh(v[jc] / speed)
                tau_scratch[jc] += damping * v[jc] + friction * th
                neg_dv[jc, jc] -= damping + friction * (1.0 - th * th) / speed
            # the column's vectors in locals: the stores into the matrices may alias dof_work
            # as far as the compiler knows, which would reload them for every ancestor
            f0, f1, f2, f3, f4, f5 = load6(dof_work, jc, DFDV)
            y0, y1, y2, y3, y4, y5 = load6(dof_work, jc, YS)
            t0 = dof_work[jc, DYT]
            t1 = dof_work[jc, DYT + 1]
            t2 = dof_work[jc, DYT + 2]
            k = dof_int[iv, DOF_PARENT]
            while k >= 0:
                row = dof_work[k]
                neg_dv[k, jc] = -(row[S_O] * f0 + row[S_O + 1] * f1 + row[S_O + 2] * f2
                                  + row[S_O + 3] * f3 + row[S_O + 4] * f4 + row[S_O + 5] * f5)
                mass = (row[S_O] * y0 + row[S_O + 1] * y1 + row[S_O + 2] * y2
                        + row[S_O + 3] * y3 + row[S_O + 4] * y4 + row[S_O + 5] * y5)
                dtau_out[k, jc] = mass
                dtau_out[jc, k] = mass
                neg_dv[jc, k] = -(y0 * row[DADV] + y1 * row[DADV + 1] + y2 * row[DADV + 2]
                                  + y3 * row[DADV + 3] + y4 * row[DADV + 4] + y5 * row[DADV + 5]
                                  + (t0 * row[S_O + 3] + t1 * row[S_O + 4] + t2 * row[S_O + 5]))
                k = dof_int[k, DOF_PARENT]
        if parent > 0:
            for k in range(22):   # YCRB, VAR_G, VAR_C
                dwork[parent, YCRB + k] += dwork[i, YCRB + k]
            for r in range(6):
                dwork[parent, FB + r] += dwork[i, FB + r]
    # ---- qdd = M^-1 (tau - tau_b), M = L^T D L (RBDA Tables 6.3-6.4)
    bad = tree_ltdl(dof_int, dtau_out, factor)
    if bad >= 0:
        return STATUS_SINGULAR + dof_int[bad, DOF_BODY]
    for k in range(nv):
        qdd_out[k] = tau[k] - tau_scratch[k]
    ltdl_solve_vector(dof_int, factor, qdd_out)
    # ---- dqdd/dtau = M^-1 (D8), now: the dense path's pass D writes into factor
    for r in range(nv):
        for c in range(nv):
            dtau_out[r, c] = 1.0 if r == c else 0.0
    ltdl_solve(dof_int, factor, dtau_out, 1.0, IDENTITY)
    if dense:
        for r in range(nv):
            for c in range(nv):
                factor[r, c] = 0.0
    # ---- forward pass C: the accelerations of qdd                                        (D9)
    for r in range(6):
        dwork[0, TMP + r] = 0.0
    for i in range(1, nb + 1):
        parent = body_int[i, PARENT]
        nv_joint = body_int[i, JOINT_NV_COL]
        iv = body_int[i, IDX_V]
        for c in range(nv_joint):   # dA/dq_j += acc_p x oS_j
            cross_motion(dwork, parent, TMP, dof_work, iv + c, S_O, dwork, i, TMP)
            for r in range(6):
                dof_work[iv + c, DADQ + r] += dwork[i, TMP + r]
        for r in range(6):          # acc_i = acc_p + oS_i qdd_i
            a = dwork[parent, TMP + r]
            for c in range(nv_joint):
                a += dof_work[iv + c, S_O + r] * qdd_out[iv + c]
            dwork[i, TMP + r] = a
        # of_i += oI_i acc_i (OH is free: the variations are computed)
        rigid_parameters_times(dwork, i, OI, dwork, i, TMP, dwork, i, OH)
        for r in range(6):
            dwork[i, OF + r] += dwork[i, OH + r]
    # ---- backward pass D: F_i, tau, dtau/dq                                       [(D6)-(D7)]
    for i in range(nb, 0, -1):
        parent = body_int[i, PARENT]
        nv_joint = body_int[i, JOINT_NV_COL]
        iv = body_int[i, IDX_V]
        for c in range(nv_joint):
            jc = iv + c
            rigid_parameters_times(dwork, i, YCRB, dof_work, jc, DADQ, dof_work, jc, DFDQ)
            variation_times(dwork, i, dof_work, jc, DVDQ, dof_work, jc, DFDQ)
            for r in range(6):
                dof_work[jc, DFDQ_BELOW + r] = dof_work[jc, DFDQ + r]
            add_cross_force(dof_work, jc, S_O, dwork, i, OF, dof_work, jc, DFDQ_BELOW)
        for c in range(nv_joint):
            jc = iv + c
            for m in range(nv_joint):
                jm = iv + m
                neg_dq[jm, jc] = -dot6(dof_work, jm, S_O, dof_work, jc, DFDQ)
            f0, f1, f2, f3, f4, f5 = load6(dof_work, jc, DFDQ_BELOW)   # (as in pass B)
            y0, y1, y2, y3, y4, y5 = load6(dof_work, jc, YS)
            t0 = dof_work[jc, DYT]
            t1 = dof_work[jc, DYT + 1]
            t2 = dof_work[jc, DYT + 2]
            k = dof_int[iv, DOF_PARENT]
            while k >= 0:
                row = dof_work[k]
                neg_dq[k, jc] = -(row[S_O] * f0 + row[S_O + 1] * f1 + row[S_O + 2] * f2
                                  + row[S_O + 3] * f3 + row[S_O + 4] * f4 + row[S_O + 5] * f5)
                neg_dq[jc, k] = -(y0 * row[DADQ] + y1 * row[DADQ + 1] + y2 * row[DADQ + 2]
                                  + y3 * row[DADQ + 3] + y4 * row[DADQ + 4]
                                  + y5 * row[DADQ + 5]
                                  + (t0 * row[DVDQ + 3] + t1 * row[DVDQ + 4]
                                     + t2 * row[DVDQ + 5]))
                k = dof_int[k, DOF_PARENT]
        if parent > 0:
            for r in range(6):
                dwork[parent, OF + r] += dwork[i, OF + r]
    # ---- dqdd/dx = M^-1 (-dtau/dx)                                                      (D8)
    if dense:   # two dense products (BLAS dgemm, as Pinocchio's Minv * dtau_dx), in this order:
        np.dot(dtau_out, neg_dv, dv_out)   # the first reads dq_out, the second writes it
        np.dot(dtau_out, neg_dq, dq_out)
    else:       # tree solves: O(nv sum(depth)) row updates each
        ltdl_solve(dof_int, factor, dq_out, 1.0, TREE_COLUMNS)
        ltdl_solve(dof_int, factor, dv_out, 1.0, TREE_COLUMNS)
    total = 0.0
    for k in range(nv):
        total += qdd_out[k] * 0.0
    if not (total == 0.0 and finite_matrix(dq_out) and finite_matrix(dv_out)
            and finite_matrix(dtau_out)):
        return STATUS_NOT_FINITE
    return STATUS_OK


@njit(cache=True)
def load_forces(body_int, body_float, work, q, out):
    """out (nv,) = -sum_i S_i^T (the loads work[:, FEXT] of the subtree of i, moved to body i):
    the drive forces that balance the loads alone (no gravity, no motion) — what the loads
    change in the inverse dynamics. work[:, ACC] is scratch (the subtree's load sums)."""
    nb = body_int.shape[0] - 1
    for i in range(1, nb + 1):
        joint_type = body_int[i, JOINT_TYPE]
        if joint_type == JOINT_REVOLUTE:
            revolute_pose(body_float, i, q[body_int[i, IDX_Q]], work, i, ROT)
        else:
            joint_pose(joint_type, body_float, i, q, body_int[i, IDX_Q], work, i, ROT,
                       TRANSFORM_SCRATCH)
        for r in range(6):
            work[i, ACC + r] = -work[i, FEXT + r]
    for i in range(nb, 0, -1):
        iv = body_int[i, IDX_V]
        for c in range(body_int[i, JOINT_NV_COL]):
            s = 0.0
            for r in range(6):
                s += body_float[i, MOTION_SUBSPACE + 6 * c + r] * work[i, ACC + r]
            out[iv + c] = s
        parent = body_int[i, PARENT]
        if parent > 0:
            force_to_parent(work, i, ROT, work, i, ACC)
            for r in range(6):
                work[parent, ACC + r] += work[i, ACC + r]
