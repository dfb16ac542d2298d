"""Module paths of earlier versions, kept working: the package's modules moved into layer
folders (docs/design.md, "Layers"), and documented paths such as `mbd_ros.plant.Plant` or
`mbd_ros.loops.LOOP_RESIDUAL_WARNING` still import, as the module that now owns the code.

`install()` (mbd_ros/__init__.py calls it) adds a finder for these names to sys.meta_path; an
import of an old path returns the new module itself (one module object, one set of globals).
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

# old module path -> the module that owns its code now (longest prefix wins)
MOVED = {
    "mbd_ros.plant": "mbd_ros.simulation.plant",
    "mbd_ros.drives": "mbd_ros.simulation.drives",
    "mbd_ros.limits": "mbd_ros.simulation.limits",
    "mbd_ros.contact": "mbd_ros.simulation.contact",
    "mbd_ros.point_trajectory": "mbd_ros.simulation.point_trajectory",
    "mbd_ros.sim_report": "mbd_ros.simulation.report",
    "mbd_ros.loops": "mbd_ros.robot.constraints",
    "mbd_ros.joint_map": "mbd_ros.robot.joint_map",
    "mbd_ros.prescribed": "mbd_ros.robot.prescribed",
    "mbd_ros.robot_source": "mbd_ros.inputs.xacro",
    "mbd_ros.xacro_process": "mbd_ros.inputs.xacro_process",
    "mbd_ros.urdf": "mbd_ros.inputs.urdf",
    "mbd_ros.urdf_elements": "mbd_ros.inputs.urdf_elements",
    "mbd_ros.yaml_input": "mbd_ros.inputs.yaml_input",
    "mbd_ros.closures": "mbd_ros.inputs.closures",
    "mbd_ros.forces": "mbd_ros.inputs.forces",
    "mbd_ros.mimic": "mbd_ros.inputs.mimic",
    "mbd_ros.layout": "mbd_ros.model.layout",
    "mbd_ros.flexible": "mbd_ros.model.flexible",
    "mbd_ros.flexible.spec": "mbd_ros.inputs.flexible",
    "mbd_ros.flexible.demo": "mbd_ros.cli.flexible_demo",
    "mbd_ros.finite": "mbd_ros.kernels.finite",
}


def new_path(name):
    """The module path `name` moved to, or None when it did not move."""
    best = None
    for old in MOVED:
        if (name == old or name.startswith(old + ".")) and (best is None or len(old) > len(best)):
            best = old
    return None if best is None else MOVED[best] + name[len(best):]


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old paths of MOVED and loads them as the new modules."""

    def __init__(self):
        self._own_specs = {}        # new module name -> its spec, between create and exec

    def find_spec(self, name, path=None, target=None):
        if not name.startswith("mbd_ros.") or new_path(name) is None:
            return None
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec):
        module = importlib.import_module(new_path(spec.name))
        self._own_specs[module.__name__] = module.__spec__
        return module

    def exec_module(self, module):
        """Nothing to run (create_module imported the new module), but importlib has just
        set the module's __spec__ to the old path's spec: give it back its own, or relative
        imports inside it see __package__ != __spec__.parent (an ImportWarning, an error
        under -W error) and pickling/reloading would use the old name."""
        module.__spec__ = self._own_specs.pop(module.__name__, module.__spec__)


def install():
    """First on sys.meta_path: a submodule of a moved package (`mbd_ros.flexible.modal`) would
    otherwise be found by the path finder in the new package's folder and loaded a second time
    under the old name, where its relative imports reach beyond the top-level package."""
    if not any(isinstance(finder, MovedModules) for finder in sys.meta_path):
        sys.meta_path.insert(0, MovedModules())
