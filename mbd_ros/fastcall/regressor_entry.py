"""C entry (mbd_ros.fastcall.C_SIGNATURE) of the joint-torque regressor (kernels/regressor.py),
for robot.regressor(q, v, qdd, out=out) (robot/identification.py installs it).

bound = (body_int, body_float, the regressor's own workspace); dims = their shapes (rows, cols)
x 3, then (nq, nv, 10 nb). A module-level function, so numba's disk cache finds it by file and
name; fastcall/__init__.py drops this folder's cache whenever a kernel source changed.
"""
import numpy as np
from numba import carray

from ..kernels.regressor import joint_torque_regressor as _joint_torque_regressor


def regressor_c(bound, dims, q, v, qdd, out):
    body_int = carray(bound[0], (dims[0], dims[1]), np.int64)
    body_float = carray(bound[1], (dims[2], dims[3]), np.float64)
    work = carray(bound[2], (dims[4], dims[5]), np.float64)
    nq, nv, n_columns = dims[6], dims[7], dims[8]
    return _joint_torque_regressor(body_int, body_float, work, carray(q, (nq,)),
                                   carray(v, (nv,)), carray(qdd, (nv,)),
                                   carray(out, (nv, n_columns)))
