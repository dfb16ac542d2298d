"""The C entries (mbd_ros.fastcall.C_SIGNATURE) of every tree's hot calls: one table.

The entry functions live in rigid_entries.py and flexible_entries.py (imported when a robot of
that kind installs its first entry: the flexible kernels are slow to import).

Each entry is `int64 entry(void **bound, int64 *dims, double *a, double *b, double *c,
double *out)`: `bound` points at the robot's arrays (never reallocated), `dims` holds their shapes
and the vector lengths; a, b, c are the input vectors (b and c NULL for mass_matrix(q, out)). An
entry runs the very kernel the Python method calls, on the same arrays: the same status codes and
results. Entries are module-level functions so that numba's disk cache finds them by file and name.

- generic (RigidTree, robot/rigid_tree.py): bound = (body_int, body_float, free_work);
  dims = their shapes (rows, cols) x 3, then (nq, nv).
- flexible (FlexibleTree, robot/flexible_tree.py): bound = (fint, ffloat, fdata, free_work,
  free_fwork, unit, column); dims = (fint rows, cols, ffloat rows, cols, nd, work rows, cols, nw,
  nq, nv).
- closed loop (the recursive loop solver, robot/loop_kinematics.py): bound = (body_int,
  body_float, free_work, cut_int, cut_float, loop_float, gains, info, multipliers); dims = the
  shapes of the six 2-D arrays, then (nq, nv, b). Any non-zero status (bad input, aliasing, a
  singular tree, a non-finite result, loops open by more than the warning threshold) sends the
  call to the Python method, which raises or warns. Thread-affine: the multipliers are per
  thread, only the owner thread's are written here.
Generated kernels (codegen/) carry their own entries in their generated module.
"""
import importlib

ENTRIES = {
    ("rigid", "forward_dynamics"): ("rigid_entries", "forward_dynamics_c"),
    ("rigid", "inverse_dynamics"): ("rigid_entries", "inverse_dynamics_c"),
    ("rigid", "mass_matrix"): ("rigid_entries", "mass_matrix_c"),
    ("flexible", "forward_dynamics"): ("flexible_entries", "flexible_forward_dynamics_c"),
    ("flexible", "inverse_dynamics"): ("flexible_entries", "flexible_inverse_dynamics_c"),
    ("flexible", "mass_matrix"): ("flexible_entries", "flexible_mass_matrix_c"),
    ("closed_loop", "forward_dynamics"): ("rigid_entries", "closed_loop_forward_dynamics_c"),
    ("closed_loop", "mass_matrix"): ("rigid_entries", "closed_loop_mass_matrix_c"),
}


def entry(kind, name):
    """The C entry function of method `name` of a `kind` tree ("rigid", "flexible",
    "closed_loop")."""
    module, function = ENTRIES[(kind, name)]
    return getattr(importlib.import_module(f"{__package__}.{module}"), function)
