"""The tree dynamics a Robot runs on: the open kinematic tree's algorithms over flat arrays.

A Robot (robot.py) has exactly one tree, chosen once at load:

- RigidTree (rigid_tree.py): the generic numba kernels of kernels/ on the rigid Model's arrays;
- GeneratedTree (generated_tree.py): a RigidTree whose unloaded dynamics run robot-specific
  generated kernels (codegen/);
- FlexibleTree (flexible_tree.py): the floating-frame kernels of kernels/flexible_* (bodies that
  carry modal coordinates).

Every tree offers the same calls, each returning a kernel status code (layout.STATUS_*) and never
raising: state checks, forward and inverse dynamics, the mass matrix, kinematics, energies, joint
wrenches, external loads, batches and the C-level entries (fastcall/). Each tree owns two
workspaces: a lock-free one with no external loads (the "free" calls: one GIL-holding kernel call,
atomic) and a "loaded" one that the Robot uses under its lock, with the loads of force elements,
callbacks, external wrenches and loop forces. Closed loops, force elements, prescribed and mimic
joints are parts of the Robot built on top of any tree (constraints.py, forces.py, prescribed.py).

This module holds what all trees share; the subclasses bind their kernels and arrays.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import numpy as np

from ..model import layout as L


@lru_cache(maxsize=None)
def thread_pool(n_threads):
    """One shared pool per thread count for the batch forms (threads are reused across calls)."""
    return ThreadPoolExecutor(max_workers=n_threads, thread_name_prefix="mbd_ros_batch")


class Tree:
    """What every tree shares. Subclasses set, in their constructor:

    nq, nv: sizes of q and v (joints, then elastic coordinates for a flexible tree);
    free_calls: {"forward_dynamics" | "inverse_dynamics": fn(q, v, x, out) -> status,
        "mass_matrix": fn(q, out) -> status} on the lock-free workspace (fastest first call;
        the Robot calls them on its fast path and replaces them by their C entries);
    generated_calls: {"bias_forces": fn(q, v, out), "gravity_forces": fn(q, out),
        "joint_wrenches": fn(q, v, qdd, out)} -> status, where generated kernels exist (else {});
    elastic_names, elastic_q_indices, elastic_v_indices: the modal coordinates (none for a
        rigid tree).
    """

    kind = "tree"
    elastic_names = ()
    elastic_q_indices = np.zeros(0, dtype=np.int64)
    elastic_v_indices = np.zeros(0, dtype=np.int64)

    def __init__(self, model):
        self.model = model
        self.nq = model.nq
        self.nv = model.nv
        self.n_links = len(model.link_names)
        self.link_index = {name: i for i, name in enumerate(model.link_names)}
        self.link_int = np.array(model.link_int)
        self.link_float = np.array(model.link_float)
        self.link_fext = np.zeros((self.n_links, 6))    # loads on links (body frames)
        self.loads_dirty = False
        self.free_calls = {}
        self.generated_calls = {}
        self._batch_works = []

    # ------------------------------------------------------------------ joint-level helpers
    def link_placement(self, link):
        """(R (3, 3), p (3,)) of link `link`'s frame in its body's frame (constant)."""
        lf = self.model.link_float
        return (lf[link, L.LINK_ROT:L.LINK_ROT + 9].reshape(3, 3),
                lf[link, L.LINK_POS:L.LINK_POS + 3])

    def link_body(self, link):
        return int(self.model.link_int[link, L.LINK_BODY])

    def joint_name_of_dof(self, iv):
        """Name of the movable joint that owns velocity index iv."""
        model = self.model
        return model.joint_names[int(np.searchsorted(model.idx_v, iv, side="right")) - 1]

    def highest_frequency(self, q):
        """Highest natural frequency (Hz) of the elastic coordinates linearised at q: 0 for a
        rigid tree (FlexibleTree computes it)."""
        return 0.0

    # ------------------------------------------------------------------ batches
    def batch(self, name, q, v, x, out, status, n_threads):
        """Run the GIL-free batch kernel `name` ("forward_dynamics" | "inverse_dynamics") over
        the N states, one contiguous chunk per worker thread, each on its own workspace."""
        kernel = self.batch_kernel(name)
        while len(self._batch_works) < n_threads:
            self._batch_works.append(self.new_batch_workspace())
        bounds = np.linspace(0, q.shape[0], n_threads + 1).astype(int)
        chunks = [(*self._batch_works[t], q[a:b], v[a:b], x[a:b], out[a:b], status[a:b])
                  for t, (a, b) in enumerate(zip(bounds[:-1], bounds[1:]))]
        if n_threads == 1:
            kernel(*chunks[0])
        else:
            list(thread_pool(n_threads).map(lambda args: kernel(*args), chunks))

    @staticmethod
    def batch_threads_for(n_states, batch_threads):
        """Worker threads for a batch of n_states: at least 64 states per thread."""
        return max(1, min(batch_threads or os.cpu_count() or 1, n_states // 64))

    # ------------------------------------------------------------------ loads
    def clear_loads(self):
        """Remove every load from the loaded workspace (after a call with loads)."""
        if self.loads_dirty:
            self.zero_loads()
            self.loads_dirty = False
