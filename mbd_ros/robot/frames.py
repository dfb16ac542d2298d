"""Frame kinematics and centroidal quantities of a Robot's tree (docs/controllers.md, "Frame
kinematics"): link velocities, classical accelerations and Jacobians, the centre of mass and
its Jacobian, the centroidal momentum matrix, M^-1 and the operational-space inertia.

One FrameKinematics per robot, built at the first call: the model arrays of the rigid tree (a
generated tree has the same arrays: its frame kinematics run these generic kernels) and private
workspaces. Each call is one kernel call on them, which holds the GIL (atomic, as the tree's
lock-free calls), so no lock is taken; a non-zero status (bad or unusual input) goes to the
Robot's `_frame_general`, which converts and checks the arguments and raises a ValueError naming
the one at fault. The q-only methods get a C-level entry (fastcall/frame_entries.py) at their
second fast call (`install_c_entry`). Links: any of robot.link_names; a link welded by fixed
joints is its body plus a constant offset (link_float's LINK_ROT/LINK_POS, copied into the
workspace's link table), as link_pose reads it.

Frames: "world", "local", "local_world_aligned" (kernels/frame_kinematics.py's docstring).
Flexible robots: `for_tree` returns their FlexibleFrameKinematics (same contract, elastic
columns; robot/flexible_frame_kinematics.py).
"""
from __future__ import annotations

import difflib
from functools import partial

import numpy as np

from ..errors import excerpt
from ..kernels import centroidal as C
from ..kernels import frame_kinematics as K
from ..kernels import minverse as MI
from ..kernels import operational_space as OS
from . import arguments as A

FRAMES = {"world": K.FRAME_WORLD, "local": K.FRAME_LOCAL,
          "local_world_aligned": K.FRAME_LOCAL_WORLD_ALIGNED}
DEFAULT_FRAME = "local_world_aligned"
# the q-only methods with a C-level entry: method -> (out rows, out columns (0: a vector))
C_ENTRY_METHODS = {"center_of_mass": lambda nv: (3, 0), "com_jacobian": lambda nv: (3, nv),
                   "centroidal_momentum_matrix": lambda nv: (6, nv),
                   "mass_matrix_inverse": lambda nv: (nv, nv)}
_EMPTY = A.EMPTY


def frame_code(frame):
    """The kernel code of a frame name; ValueError listing the three otherwise."""
    try:
        return FRAMES[frame]
    except (KeyError, TypeError):
        raise ValueError(f"frame must be one of 'world', 'local', 'local_world_aligned', got "
                         f"{excerpt(frame, 60)}") from None


def unknown_link_message(link, names):
    """'unknown link ...' with the closest names (or the first few)."""
    close = difflib.get_close_matches(str(link), names, n=4, cutoff=0.5)
    hint = (f"did you mean {', '.join(repr(n) for n in close)}?" if close else
            f"links: {', '.join(names[:8])}{', ...' if len(names) > 8 else ''}")
    return f"unknown link '{excerpt(str(link), 60)}' ({hint})"


def for_tree(tree, method):
    """FrameKinematics of a rigid (or generated) tree; a flexible tree's own
    (FlexibleTree.frame_kinematics: robot/flexible_frame_kinematics.py, the elastic columns
    included). `method`: the calling method, for an error of a kind without frame kinematics
    (every tree kind has them today)."""
    if tree.kind == "flexible":
        return tree.frame_kinematics()
    return FrameKinematics(tree)


class FrameKinematics:
    """Kernels and workspaces of one robot's frame kinematics (module docstring)."""

    def __init__(self, tree):
        self.tree = tree
        self.nq = tree.nq
        self.nv = tree.nv
        self.link_names = list(tree.model.link_names)
        self.link_index = dict(tree.link_index)
        self.body_int = tree.body_int
        self.body_float = tree.body_float
        self.link_int = np.ascontiguousarray(tree.link_int)
        self.link_float = np.ascontiguousarray(tree.link_float)
        rows = self.body_int.shape[0]
        self.work = K.frame_workspace(self.body_int, self.link_int, self.link_float, self.nq)
        self.blocks = np.zeros((6 * rows, self.nv))       # M^-1's per-body 6 x nv blocks
        self.minv = np.zeros((self.nv, self.nv))
        self.jacobian_scratch = np.zeros((6, self.nv))
        self.osi_scratch = np.zeros((6, self.nv + 6))
        self.targets = {}          # (link, frame) -> (link index, frame code), once validated
        self.c_pending = dict.fromkeys(C_ENTRY_METHODS, 0)   # fast calls before the C entry
        self.link_calls = {}       # (method, link, frame) -> KernelCall (robot._promote_link_call)
        self.link_counts = {}      # (method, link, frame) -> fast calls with out= so far
        self.link_targets = []     # the KernelCalls' [link index, frame code] arrays, kept alive
        self.bind_kernels()

    # ------------------------------------------------------------------ arguments
    def target(self, link, frame):
        """(link index, frame code), validated once per pair."""
        try:
            return self.targets[(link, frame)]
        except (KeyError, TypeError):
            pass
        A.link_name(link, self.link_names)
        index = self.link_index.get(link)
        if index is None:
            raise ValueError(unknown_link_message(link, self.link_names))
        code = frame_code(frame)
        self.targets[(link, frame)] = (index, code)
        return index, code

    # ------------------------------------------------------------------ kernel calls
    # The fast paths of robot.py call these partials (C-level functools.partial: no Python frame
    # between the method and the kernel) inside try/except TypeError (numba refuses arguments
    # of other types: the general path then converts them). Each returns a status.

    def bind_kernels(self):
        """The kernels bound to this robot's arrays: jacobian(q, link, frame, out),
        velocity(q, v, link, frame, out), acceleration(q, v, qdd, link, frame, out),
        center_of_mass(q, out), com_jacobian(q, out), centroidal(q, out), minverse(q, out)."""
        link_arrays = tree_arrays = (self.body_int, self.body_float, self.work)
        self.jacobian = partial(K.frame_jacobian, *link_arrays)
        self.velocity = partial(K.frame_velocity, *link_arrays)
        self.acceleration = partial(K.frame_classical_acceleration, *link_arrays)
        self.center_of_mass = partial(C.center_of_mass, *tree_arrays)
        self.com_jacobian = partial(C.com_jacobian, *tree_arrays)
        self.centroidal = partial(C.centroidal_momentum_matrix, *tree_arrays)
        self.minverse = partial(MI.mass_matrix_inverse, self.body_int, self.body_float,
                                self.work, self.blocks)

    @staticmethod
    def status_of(call, *args):
        """call(*args), or -1 when numba refuses the argument types."""
        try:
            return call(*args)
        except TypeError:
            return -1

    # ------------------------------------------------------------------ C-level entries
    def install_c_entry(self, robot, method):
        """Replace robot.<method> (one of C_ENTRY_METHODS) by a KernelCall of its C entry
        (mbd_ros/fastcall, fastcall/frame_entries.py): the form method(q, out=out) then skips
        numba's dispatcher. Returns the KernelCall, or None without the C extension."""
        from .. import fastcall
        if not fastcall.AVAILABLE:
            return None
        from ..fastcall.frame_entries import ENTRIES
        rows, cols = C_ENTRY_METHODS[method](self.nv)
        bound = [self.body_int, self.body_float, self.work]
        dims = fastcall.dims_of(*bound) + (self.nq, rows, cols)
        if method == "mass_matrix_inverse":
            bound.append(self.blocks)
            dims += fastcall.dims_of(self.blocks)
        return fastcall.install(robot, method, ENTRIES[method], tuple(bound), dims,
                                (self.nq, rows), out_cols=cols)

    def link_call(self, method, index, code, fallback):
        """A KernelCall of the link method `method` ("link_jacobian" | "link_velocity" |
        "link_acceleration") for link `index` in frame `code`: call(q[, v[, qdd]], out=out),
        any other form or a non-zero status going to `fallback` with the same arguments. None
        without the C extension."""
        from .. import fastcall
        if not fastcall.AVAILABLE:
            return None
        from ..fastcall.frame_entries import LINK_ENTRIES
        target = np.array([index, code], dtype=np.int64)
        self.link_targets.append(target)     # the KernelCall reads it through a raw pointer
        bound = (self.body_int, self.body_float, self.work, target)
        dims = fastcall.dims_of(self.body_int, self.body_float, self.work) + (self.nq, self.nv)
        inputs = {"link_jacobian": (self.nq,), "link_velocity": (self.nq, self.nv),
                  "link_acceleration": (self.nq, self.nv, self.nv)}[method]
        rows, cols = (6, self.nv) if method == "link_jacobian" else (6, 0)
        return fastcall.KernelCall(fastcall.c_entry(LINK_ENTRIES[method]).address, bound, dims,
                                   inputs + (rows,), fallback, cols)

    # ------------------------------------------------------------------ inverse inertia
    def operational_space_inertia(self, q, index, code, damping, out):
        """(status, solved) of Lambda at q (q checked by the caller): the link's Jacobian and
        M^-1 into the private scratch, then the 6 x 6 solve. solved False: a tree status."""
        status = self.jacobian(q, index, code, self.jacobian_scratch) or \
            self.minverse(q, self.minv)
        if status:
            return status, False
        return OS.operational_space_inertia(self.jacobian_scratch, self.minv, damping,
                                            self.osi_scratch, out), True
