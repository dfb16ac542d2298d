"""Robot-specific generated dynamics kernels (docs/codegen.md).

    robot = mbd_ros.load("arm.urdf", codegen=True)   # same API and results, generated kernels

generator.py writes the Python source of one robot's kernels (expr.py and spatial_sym.py fold its
constants), cache.py stores it on disk keyed by a hash of the model, kernels.py compiles it with
numba; robot/generated_tree.py runs them behind the Robot API.
"""
from .cache import cache_dir, model_key  # noqa: F401

# more bodies than this: codegen=True keeps the generic kernels (with a warning): straight-line
# code grows with the bodies and numba's compile time faster than that (talos_reduced, 38 bodies:
# ~80 s of CPU for all six kernels), while the generic kernels are linear in the bodies anyway
MAX_GENERATED_BODIES = 100
