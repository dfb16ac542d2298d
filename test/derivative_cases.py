"""Example robots of the derivative tests (test_derivatives.py, test_codegen_derivatives.py,
test_derivatives_c_calls.py): an example-robot-data URDF loaded with passive forces off
(Pinocchio has none), optionally also with codegen=True, its Pinocchio oracle (test/oracle.py:
q/v mapped by joint name, free-flyer q = [x y z qx qy qz qw] in both), seeded random states, and
the comparison of (nv, nv) matrices with Pinocchio's."""
from __future__ import annotations

import zlib

import numpy as np
from conftest import _missing_oracle
from oracle import PinOracle, parse_urdf, pin_model_from_xml

import mbd_ros

# max |ours - Pinocchio| <= PIN_RTOL ||Pinocchio||_2: both sides are sums of products over the
# tree and backward-stable M^-1 solves (measured agreement 1e-16-1e-13 of the norm)
PIN_RTOL = 1e-10
# key: (path in example-robot-data, floating base)
EXAMPLE_ROBOTS = {
    "ur5": ("ur_description/urdf/ur5_robot.urdf", False),
    "panda": ("panda_description/urdf/panda.urdf", False),
    "solo12": ("solo_description/robots/solo12.urdf", True),
}
# robots of a few dedicated tests only (not parametrised over every test: compile and run time):
# talos_reduced (38 dofs with its floating base, branched) takes the forward derivatives' dense
# products (kernels/derivatives.py, DENSE_PRODUCTS_FROM)
LARGE_ROBOTS = {
    "talos_reduced": ("talos_data/robots/talos_reduced.urdf", True),
}


class ExampleRobot:
    """`robot` (generic kernels), `generated` (codegen=True, when asked), `oracle`, `rng`."""

    def __init__(self, pin, erd_dir, key, codegen=False):
        rel, self.floating = {**EXAMPLE_ROBOTS, **LARGE_ROBOTS}[key]
        path = erd_dir / rel
        if not path.is_file():
            _missing_oracle(f"{rel} not found in example-robot-data at {erd_dir}")
        self.key, self.pin = key, pin
        xml = path.read_text()
        self.robot = mbd_ros.load(str(path), floating_base=self.floating, passive_forces=False)
        self.generated = mbd_ros.load(str(path), floating_base=self.floating,
                                      passive_forces=False, codegen=True) if codegen else None
        model, link_frame = pin_model_from_xml(pin, xml, self.floating)
        self.oracle = PinOracle(pin, model, link_frame, parse_urdf(xml), self.floating)
        self.rng = np.random.default_rng(zlib.crc32(key.encode()))

    def state(self):
        """A random (q, v, x): x is qdd or tau, 3x the size of v."""
        r = self.robot
        return (r.random_configuration(self.rng), self.rng.standard_normal(r.nv),
                3.0 * self.rng.standard_normal(r.nv))

    def matrix(self, m):
        """A Pinocchio (nv, nv) matrix in our v order (a copy)."""
        m = np.asarray(m)
        return m[np.ix_(self.oracle.vperm, self.oracle.vperm)]

    def reference(self, method, q, v, x):
        """Pinocchio's three matrices of `method` ("inverse_dynamics_derivatives": RNEA's,
        "forward_dynamics_derivatives": ABA's) at (q, v, x), in our v order (copies)."""
        pin, o = self.pin, self.oracle
        if method == "inverse_dynamics_derivatives":
            ref = pin.computeRNEADerivatives(o.model, o.data, o.q_pin(q), o.v_pin(v), o.v_pin(x))
            return tuple(self.matrix(m) for m in ref)
        pin.computeABADerivatives(o.model, o.data, o.q_pin(q), o.v_pin(v), o.v_pin(x))
        minv = np.triu(o.data.Minv) + np.triu(o.data.Minv, 1).T
        return tuple(self.matrix(m) for m in (o.data.ddq_dq, o.data.ddq_dv, minv))


def assert_matrix_close(ours, ref, what, rtol=PIN_RTOL):
    """max |ours - ref| <= rtol ||ref||_2, the worst entry named in the failure."""
    ours = np.asarray(ours)
    ref = np.asarray(ref)
    assert ours.shape == ref.shape, f"{what}: shape {ours.shape}, expected {ref.shape}"
    scale = max(float(np.linalg.norm(ref, 2)), 1e-300)
    err = np.abs(ours - ref)
    worst = np.unravel_index(int(np.argmax(err)), err.shape)
    assert err[worst] <= rtol * scale, (
        f"{what}: max |error| {err[worst]:.3e} > {rtol:g} x ||ref|| {scale:.3g} at {worst}: "
        f"got {ours[worst]!r}, expected {ref[worst]!r}")
