"""Column layout of the flat arrays of a robot with flexible links (kernels/flexible_dynamics.py).

Model (immutable):
- ``fint``   (nb + 1, FINT_WIDTH) int64: topology, index maps and offsets into fdata / fwork.
- ``ffloat`` (nb + 1, FFLOAT_WIDTH) float64: joint placement, axis, rigid inertia, joint damping.
- ``fdata``  (n,) float64: per flexible body a block of shape integrals (FLEX_* below) and per
  attachment (a child joint or a fixed child link on a flexible link) the mode shapes of its
  origin (ATTACH block: Phi_t (3, n_f) translation, Phi_r (3, n_f) small rotation).
Data (workspace): ``work`` (nb + 1, WORK_WIDTH) and ``fwork`` (m,) with one FW_* block per
flexible body and one 6 x n_f node Jacobian per child of a flexible body.

Bodies are the movable joints (fixed URDF joints are merged as in model.py); row 0 is the
universe. A flexible body's reference frame is its joint frame (the beam is clamped there).
Motion vectors are [linear; angular], wrenches [force; torque], in the body's reference frame.
"""

from .. import layout as _L

# ---- fint columns ---------------------------------------------------------------------------------
PARENT = 0          # parent body (-1 for the universe)
JOINT_TYPE = 1      # joint type code (mbd_ros.layout JOINT_*)
IDX_Q = 2           # first joint coordinate in q
IDX_V = 3           # first joint velocity in v
NF = 4              # number of elastic coordinates of the body (0: rigid)
IDX_QF = 5          # first elastic coordinate in q
IDX_VF = 6          # first elastic velocity in v
FLEX = 7            # offset of the body's FLEX block in fdata (-1: rigid)
ATTACH = 8          # offset of the ATTACH block of the joint origin on a flexible parent (-1: none)
FWORK = 9           # offset of the body's FW block in fwork (-1: rigid)
XI = 10             # offset in fwork of the node Jacobian Xi (6 x n_f of the parent) (-1: none)
MFF_INV = 11        # flexible body without movable children: offset in fdata of its CONDENSE
                    # block (below; -1: children add to M_ff, factorised at run time)
NV_JOINT = 12       # joint velocity coordinates k (columns of S)
NQ_JOINT = 13       # joint position coordinates
SPARSE = 14         # flexible body: offset in fdata of its SPARSE block (below; -1: rigid)
FINT_WIDTH = 15

# ---- ffloat columns: a row of the rigid model's body_float (mbd_ros.layout), so that the rigid
# joint kinematics (kernels/kinematics.py joint_pose) reads it directly ------------------------------
PLACEMENT_ROT = _L.PLACEMENT_ROT     # 9: joint frame in the parent's reference frame (undeformed)
PLACEMENT_POS = _L.PLACEMENT_POS     # 3
AXIS = _L.AXIS                       # 3: revolute/prismatic axis, joint frame
INERTIA = _L.SPATIAL_INERTIA         # 36: rigid spatial inertia about the body origin (rigid bodies)
MOTION_SUBSPACE = _L.MOTION_SUBSPACE  # 36: S (6 x k), column j at 6 j
DAMPING = _L.DAMPING                 # 6: joint viscous damping per dof
FRICTION = _L.FRICTION               # 6: joint Coulomb friction per dof
FRICTION_SPEED = _L.FRICTION_SPEED   # friction smoothing speed
FFLOAT_WIDTH = _L.BODY_FLOAT_WIDTH
GRAVITY = _L.GRAVITY                 # row 0: gravity (3) in the root frame

# ---- fdata FLEX block of a flexible body with n elastic coordinates (offsets from its start) -----
FLEX_MASS = 0       # m = sum m_j
FLEX_S0 = 1         # 3: S_0 = sum m_j u0_j  (first moment, undeformed)
FLEX_P0 = 4         # 9: Theta^kl = sum m_j u0_jk u0_jl (seed eq. 7)
FLEX_JSUM = 13      # 9: sum of the nodes' rotary inertias J_j
FLEX_SF = 22        # then: S_f (3 x n) = sum m_j N_j                     (seed eq. 4)
#                         I^kl (3 x 3 x n) = sum m_j u0_jk N_jl           (seed eq. 7)
#                         S^kl (3 x 3 x n x n) = sum m_j N_jk^T N_jl      (seed eq. 7)
#                         J_Psi (3 x n) = sum J_j Psi_j                  (rotary inertia coupling)
#                         m_ff (n x n) = S^xx + S^yy + S^zz + sum Psi_j^T J_j Psi_j
#                         K_ff (n x n), D_ff (n x n)
#                         G (3 x n x n): G_x = S^zy - S^yz, G_y = S^xz - S^zx, G_z = S^yx - S^xy
#                         (the seed's I_Rf quadratic part and the gyroscopic matrix sum w_k G_k)


# ---- fdata blocks precomputed at load time for the forward dynamics (build.py sparse_block,
# condense_block). Entry lists are flat [count, (out, in, value) * count] with the integer indices
# stored as floats (exact below 2^53), ordered so that consecutive entries accumulate into
# different outputs:
# SPARSE block of a flexible body: the nonzero S^kl[a, b] as (out = (3 k + l) n + a, b, value)
#     (s_kl = S^kl q_f accumulated entry by entry), then the nonzero gyroscopic G_k[a, b]
#     (layout of the FLEX block) as (a, 3 b + k, value).
# CONDENSE block of a flexible body without movable children (m_ff constant, at MFF_INV):
#     m_ff^-1 (n x n), Y0 = m_ff^-1 M_fr(q_f = 0) (n x 6), A0 = M_rf(0) m_ff^-1 M_fr(0) (6 x 6),
#     then the nonzero H_k[a, b] = (m_ff^-1 G_k)[a, b] as (6 a + 3 + k, b, value): the q_f-linear
#     part of Y = m_ff^-1 M_fr (M_fr's angular column k is M_fr(0) + G_k q_f).
# Entries below SPARSE_TOL times the largest |entry| of their tensor are dropped (round-off of
# modes that do not couple, e.g. the two bending planes, stretching and torsion of a straight
# beam); the results change by less than about 1e-13 relative.
SPARSE_TOL = 1e-14


def flex_block_size(n):
    return FLEX_SF + 3 * n + 9 * n + 9 * n * n + 3 * n + 3 * n * n + 3 * n * n


def attach_block_size(n):
    return 6 * n


def fwork_block_size(n):
    """M (6+n)^2, beta (6+n), Y (n x 6), z (n), qdd_f (n), S^kl q (9n), two (n) temporaries,
    Cholesky factor (n x n), W (6 x n)."""
    return (6 + n) * (6 + n) + (6 + n) + 6 * n + n + n + 9 * n + 2 * n + n * n + 6 * n


# ---- work columns ---------------------------------------------------------------------------------
ROT = 0             # 9: rotation of the body frame in the parent reference frame (deformed node)
POS = 9             # 3
VEL = 12            # 6: body twist V_i
ACC = 18            # 6: body acceleration a_i (gravity as a base acceleration)
BIAS = 24           # 6: velocity-product acceleration c_i (joint and node motion)
FORCE = 30          # 6: RNEA joint wrench / ABA articulated bias p^A
ART_INERTIA = 36    # 36: articulated inertia I^A
U_VEC = 72          # 6: U = I^A S
D_INV = 78          # 1/(S^T I^A S)
U_TAU = 79          # u = tau - S^T p^A
WORLD_ROT = 80      # 9
WORLD_POS = 89      # 3
FEXT = 92           # 6: external wrench on the body, body frame
NODE_POS = 98       # 3: p_N, the deformed joint origin in the parent reference frame
X_MAT = 101         # 36: motion transform parent reference -> body (6 x 6, row-major)
SCRATCH = 137       # 36
SCRATCH2 = 173      # 36
NODE_TWIST = 209    # 6: nu, the node's twist relative to the parent reference (parent frame)
U_MULTI = 215       # 36: multi-dof joints: U = I^A S (6 x k, column j at 6 j)
D_MULTI = 251       # 36: S^T I^A S (k x k)
DINV_MULTI = 287    # 36: its inverse
UTAU_MULTI = 323    # 6: u = tau - S^T p^A (k)
WORK_WIDTH = 329
