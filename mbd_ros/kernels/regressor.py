"""Joint-torque regressor: tau = Y(q, v, qdd) pi, linear in the bodies' inertial parameters.

pi stacks, per moving body i (the Model's bodies 1..nb: links merged by fixed joints), the ten
parameters [m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz] about the body origin in
the body frame (I = I_c - m [c][c]; Pinocchio's Inertia::toDynamicParameters order).

The rigid-body equation f_i = I_i a_i + v_i x* I_i v_i (gravity as the base acceleration -g,
Featherstone's trick) is linear in pi_i: f_i = A(v_i, a_i) pi_i with the 6 x 10 "body regressor"
A (Atkeson, An & Hollerbach 1986; Khalil & Dombre, "Modeling, identification and control of
robots", 2002, ch. 12; Pinocchio's bodyRegressor). The drive force of joint j is
tau_j = S_j^T sum_{i in subtree(j)} X*_{j<-i} f_i (RNEA's backward pass, Featherstone RBDA
eq. 5.10), so the block of Y at (rows of joint j, columns of body i) is S_j^T X*_{j<-i} A_i for
every ancestor j of i (j = i included), and zero elsewhere (Pinocchio's
computeJointTorqueRegressor, which walks the 6 x 10 block up the ancestors).

Here both factors are put in the root frame once per body: S_j^0 = X_{0<-j} S_j (motion, about
the root origin) and A_i^0 = X*_{0<-i} A_i (force, about the root origin); then
S_j^T X*_{j<-i} A_i = (S_j^0)^T A_i^0 (the spatial dot product is frame invariant), one 6-vector
dot per (ancestor dof, column) instead of moving ten force columns through every ancestor.
One forward pass, base to tips; no allocation. The damping, friction and force elements of the
robot are not in Y (they are not linear in pi).
"""
from numba import types

from . import signatures
from .entry import entry_point
from .kinematics import joint_motion, joint_pose, revolute_pose, state_status
from .output_checks import STATUS_ALIASED, STATUS_NOT_FINITE, overlaps_any
from .spatial import compose_pose, cross_motion, motion_to_child
from ..model.layout import (GRAVITY, IDX_Q, IDX_V, JOINT_NV_COL, JOINT_REVOLUTE, JOINT_TYPE,
                            MOTION_SUBSPACE, PARENT, STATUS_OK, STATUS_SHAPE_OUT)

N_PARAMETERS = 10   # per body

# ---- columns of the regressor's own workspace (one row per body, row 0 the universe) ---------
POSE = 0             # 12: pose of body i in its parent frame (R row-major, p)
WORLD_POSE = 12      # 12: pose of body i in the root frame
VEL = 24             # 6: spatial velocity of body i, body frame
ACC = 30             # 6: spatial acceleration of body i with gravity (a_i + X a_g), body frame
SCRATCH = 36         # 9: S_i eta_i (6); joint_pose's rotation scratch (9)
MOTION_WORLD = 45    # 36: S_i^0 = X_{0<-i} S_i, column j at +6 j, root frame about its origin
BODY_REGRESSOR = 81  # 60: A_i^0 = X*_{0<-i} A_i, column c at +6 c, root frame about its origin
                     # (columns 4..9: only their angular rows +3..+5 are written and read)
WORK_WIDTH = 141

REGRESSOR = types.int64(signatures.MODEL_INT, signatures.MODEL_FLOAT, signatures.WORK,
                        signatures.VECTOR, signatures.VECTOR, signatures.VECTOR,
                        signatures.MATRIX)


@entry_point(REGRESSOR)
def joint_torque_regressor(body_int, body_float, work, q, v, qdd, out):
    """out (nv, 10 nb) = Y(q, v, qdd): out @ pi = the rigid tree's inverse dynamics (gravity
    included; no damping, friction, force elements or external wrenches). work: (nb + 1,
    WORK_WIDTH) scratch. Returns a status code (layout.STATUS_*; STATUS_ALIASED when out overlaps
    q, v or qdd, before anything is written; STATUS_NOT_FINITE on overflow); never raises."""
    if overlaps_any(out, q, v, qdd):
        return STATUS_ALIASED
    status = state_status(body_int, q, v, qdd, True, True)
    if status != STATUS_OK:
        return status
    nb = body_int.shape[0] - 1
    nv = v.shape[0]
    if out.shape[0] != nv or out.shape[1] != N_PARAMETERS * nb:
        return STATUS_SHAPE_OUT
    for r in range(nv):
        for c in range(N_PARAMETERS * nb):
            out[r, c] = 0.0
    # universe: identity pose, at rest, accelerating by -g (RBDA §5.3)
    for k in range(12):
        work[0, WORLD_POSE + k] = 1.0 if (k < 9 and k % 4 == 0) else 0.0
    for k in range(6):
        work[0, VEL + k] = 0.0
        work[0, ACC + k] = 0.0
    for k in range(3):
        work[0, ACC + k] = -body_float[0, GRAVITY + k]
    finite = 0.0
    for i in range(1, nb + 1):
        parent = body_int[i, PARENT]
        k_i = body_int[i, JOINT_NV_COL]
        iv = body_int[i, IDX_V]
        joint_type = body_int[i, JOINT_TYPE]
        if joint_type == JOINT_REVOLUTE:
            revolute_pose(body_float, i, q[body_int[i, IDX_Q]], work, i, POSE)
        else:
            joint_pose(joint_type, body_float, i, q, body_int[i, IDX_Q], work, i, POSE, SCRATCH)
        compose_pose(work, parent, WORLD_POSE, work, i, POSE, work, i, WORLD_POSE)
        # v_i = X_{i<-p} v_p + S_i qd_i;  a_i = X_{i<-p} a_p + S_i qdd_i + v_i x S_i qd_i
        #                                                              (RBDA eqs. 5.7-5.8)
        motion_to_child(work, i, POSE, work, parent, VEL, work, i, VEL)
        joint_motion(body_float, i, k_i, v, iv, work, i, SCRATCH)
        for r in range(6):
            work[i, VEL + r] += work[i, SCRATCH + r]
        motion_to_child(work, i, POSE, work, parent, ACC, work, i, ACC)
        cross_motion(work, i, VEL, work, i, SCRATCH, work, i, SCRATCH)
        for r in range(6):
            work[i, ACC + r] += work[i, SCRATCH + r]
        joint_motion(body_float, i, k_i, qdd, iv, work, i, SCRATCH)
        for r in range(6):
            work[i, ACC + r] += work[i, SCRATCH + r]
        # root-frame pose (R, p) of body i: x_0 = R x_i + p
        r0 = work[i, WORLD_POSE]
        r1 = work[i, WORLD_POSE + 1]
        r2 = work[i, WORLD_POSE + 2]
        r3 = work[i, WORLD_POSE + 3]
        r4 = work[i, WORLD_POSE + 4]
        r5 = work[i, WORLD_POSE + 5]
        r6 = work[i, WORLD_POSE + 6]
        r7 = work[i, WORLD_POSE + 7]
        r8 = work[i, WORLD_POSE + 8]
        px = work[i, WORLD_POSE + 9]
        py = work[i, WORLD_POSE + 10]
        pz = work[i, WORLD_POSE + 11]
        # S_i^0 = X_{0<-i} S_i: [R s_l + p x R s_w; R s_w]               (RBDA eq. 2.24)
        for j in range(k_i):
            s = MOTION_SUBSPACE + 6 * j
            lx = body_float[i, s]
            ly = body_float[i, s + 1]
            lz = body_float[i, s + 2]
            ax = body_float[i, s + 3]
            ay = body_float[i, s + 4]
            az = body_float[i, s + 5]
            wx = r0 * ax + r1 * ay + r2 * az
            wy = r3 * ax + r4 * ay + r5 * az
            wz = r6 * ax + r7 * ay + r8 * az
            o = MOTION_WORLD + 6 * j
            work[i, o] = r0 * lx + r1 * ly + r2 * lz + py * wz - pz * wy
            work[i, o + 1] = r3 * lx + r4 * ly + r5 * lz + pz * wx - px * wz
            work[i, o + 2] = r6 * lx + r7 * ly + r8 * lz + px * wy - py * wx
            work[i, o + 3] = wx
            work[i, o + 4] = wy
            work[i, o + 5] = wz
        # ---- body regressor A_i (body frame): f = I a + v x* I v = A(v, a) pi_i with
        #      v = [v_l; w], a = [a_l; dw], beta = a_l + w x v_l:
        #      m:      [beta; 0]
        #      h_k:    [dw x e_k + w x (w x e_k); e_k x beta]
        #      I_o:    [0; L(dw) + w x L(w)],  I_o u = L(u) [xx xy yy xz yz zz]
        #      written directly in the root frame, A^0 = X*_{0<-i} A = [R f; R n + p x R f]
        #      (RBDA eq. 2.25), with R e_k = R_k (column k of R), R (a x b) = R a x R b:
        #      m:      B = R beta,  [B; p x B]
        #      h_k:    f_k = D x R_k + w_k W - |w|^2 R_k  (W = R w, D = R dw),
        #              [f_k; R_k x B + p x f_k]
        #      I_o:    [0; R L(dw) + W x R L(w)], R L(u) e_xx = u_x R_0, e_xy: u_y R_0 + u_x R_1...
        vx = work[i, VEL]
        vy = work[i, VEL + 1]
        vz = work[i, VEL + 2]
        wx = work[i, VEL + 3]
        wy = work[i, VEL + 4]
        wz = work[i, VEL + 5]
        dx = work[i, ACC + 3]
        dy = work[i, ACC + 4]
        dz = work[i, ACC + 5]
        ex = work[i, ACC] + wy * vz - wz * vy
        ey = work[i, ACC + 1] + wz * vx - wx * vz
        ez = work[i, ACC + 2] + wx * vy - wy * vx
        bx = r0 * ex + r1 * ey + r2 * ez          # B = R beta
        by = r3 * ex + r4 * ey + r5 * ez
        bz = r6 * ex + r7 * ey + r8 * ez
        Wx = r0 * wx + r1 * wy + r2 * wz          # W = R w
        Wy = r3 * wx + r4 * wy + r5 * wz
        Wz = r6 * wx + r7 * wy + r8 * wz
        Dx = r0 * dx + r1 * dy + r2 * dz          # D = R dw
        Dy = r3 * dx + r4 * dy + r5 * dz
        Dz = r6 * dx + r7 * dy + r8 * dz
        w2 = wx * wx + wy * wy + wz * wz
        f = BODY_REGRESSOR
        work[i, f] = bx
        work[i, f + 1] = by
        work[i, f + 2] = bz
        work[i, f + 3] = py * bz - pz * by
        work[i, f + 4] = pz * bx - px * bz
        work[i, f + 5] = px * by - py * bx
        for k in range(3):
            # R_k = column k of R
            ck0 = work[i, WORLD_POSE + k]
            ck1 = work[i, WORLD_POSE + 3 + k]
            ck2 = work[i, WORLD_POSE + 6 + k]
            wk = work[i, VEL + 3 + k]
            fx = Dy * ck2 - Dz * ck1 + wk * Wx - w2 * ck0
            fy = Dz * ck0 - Dx * ck2 + wk * Wy - w2 * ck1
            fz = Dx * ck1 - Dy * ck0 + wk * Wz - w2 * ck2
            o = f + 6 + 6 * k
            work[i, o] = fx
            work[i, o + 1] = fy
            work[i, o + 2] = fz
            work[i, o + 3] = ck1 * bz - ck2 * by + py * fz - pz * fy
            work[i, o + 4] = ck2 * bx - ck0 * bz + pz * fx - px * fz
            work[i, o + 5] = ck0 * by - ck1 * bx + px * fy - py * fx
        # C_k = W x R_k
        c00 = Wy * r6 - Wz * r3
        c01 = Wz * r0 - Wx * r6
        c02 = Wx * r3 - Wy * r0
        c10 = Wy * r7 - Wz * r4
        c11 = Wz * r1 - Wx * r7
        c12 = Wx * r4 - Wy * r1
        c20 = Wy * r8 - Wz * r5
        c21 = Wz * r2 - Wx * r8
        c22 = Wx * r5 - Wy * r2
        # torques of I_xx, I_xy, I_yy, I_xz, I_yz, I_zz (columns 4..9, angular rows only)
        work[i, f + 27] = dx * r0 + wx * c00
        work[i, f + 28] = dx * r3 + wx * c01
        work[i, f + 29] = dx * r6 + wx * c02
        work[i, f + 33] = dy * r0 + dx * r1 + wy * c00 + wx * c10
        work[i, f + 34] = dy * r3 + dx * r4 + wy * c01 + wx * c11
        work[i, f + 35] = dy * r6 + dx * r7 + wy * c02 + wx * c12
        work[i, f + 39] = dy * r1 + wy * c10
        work[i, f + 40] = dy * r4 + wy * c11
        work[i, f + 41] = dy * r7 + wy * c12
        work[i, f + 45] = dz * r0 + dx * r2 + wz * c00 + wx * c20
        work[i, f + 46] = dz * r3 + dx * r5 + wz * c01 + wx * c21
        work[i, f + 47] = dz * r6 + dx * r8 + wz * c02 + wx * c22
        work[i, f + 51] = dz * r1 + dy * r2 + wz * c10 + wy * c20
        work[i, f + 52] = dz * r4 + dy * r5 + wz * c11 + wy * c21
        work[i, f + 53] = dz * r7 + dy * r8 + wz * c12 + wy * c22
        work[i, f + 57] = dz * r2 + wz * c20
        work[i, f + 58] = dz * r5 + wz * c21
        work[i, f + 59] = dz * r8 + wz * c22
        # ---- Y[rows of j, columns of i] = (S_j^0)^T A_i^0 for j = i and its ancestors
        col = N_PARAMETERS * (i - 1)
        j = i
        while j > 0:
            k_j = body_int[j, JOINT_NV_COL]
            row = body_int[j, IDX_V]
            for m in range(k_j):
                s = MOTION_WORLD + 6 * m
                s0 = work[j, s]
                s1 = work[j, s + 1]
                s2 = work[j, s + 2]
                s3 = work[j, s + 3]
                s4 = work[j, s + 4]
                s5 = work[j, s + 5]
                for c in range(4):
                    o = f + 6 * c
                    y = (s0 * work[i, o] + s1 * work[i, o + 1] + s2 * work[i, o + 2]
                         + s3 * work[i, o + 3] + s4 * work[i, o + 4] + s5 * work[i, o + 5])
                    out[row + m, col + c] = y
                    finite += y * 0.0
                for c in range(4, N_PARAMETERS):
                    o = f + 6 * c + 3
                    y = s3 * work[i, o] + s4 * work[i, o + 1] + s5 * work[i, o + 2]
                    out[row + m, col + c] = y
                    finite += y * 0.0
            j = body_int[j, PARENT]
    if finite != 0.0:
        return STATUS_NOT_FINITE
    return STATUS_OK
