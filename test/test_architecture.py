"""The package's shape: no import cycles among its modules (imports inside functions included),
and no module importing a name beginning with `_` from another module (what is shared is public
in the module that owns it). Read with `ast`, nothing is imported or run.

An edge A -> B is an explicit import in module A of module B: `import mbd_ros.x.y`,
`from .x import name` (B = the module x, or x.name when that is a module), `from . import x`.
The implicit import of a parent package is not an edge (every submodule would otherwise depend
on its package's __init__).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "mbd_ros"
# generated modules (codegen caches) are data, not the package's code
IGNORED_PARTS = {"_generated", "__pycache__"}


def _module_name(path):
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_modules():
    """{module name: path} of every module of the package."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if IGNORED_PARTS & set(path.parts):
            continue
        modules[_module_name(path)] = path
    return modules


def _resolve(module, path, node):
    """The absolute module named by an ImportFrom's `module` and `level` in `module`."""
    if node.level == 0:
        return node.module
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


def imports_of(module, path, modules):
    """[(imported module, imported names, line)] of every import statement in the module, at
    any depth (functions, classes, conditionals), within the package."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules:
                    found.append((alias.name, (), node.lineno))
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, path, node)
            if base is None or not (base in modules or base.split(".")[0] == "mbd_ros"):
                continue
            for alias in node.names:
                target = f"{base}.{alias.name}"
                if target in modules:              # `from pkg import submodule`
                    found.append((target, (), node.lineno))
                else:
                    found.append((base, (alias.name,), node.lineno))
    return found


def import_graph():
    modules = package_modules()
    return modules, {m: imports_of(m, p, modules) for m, p in modules.items()}


def find_cycle(graph):
    """One import cycle as a list of modules, or None (iterative DFS)."""
    edges = {m: sorted({target for target, _, _ in imports if target in graph and target != m})
             for m, imports in graph.items()}
    state = {}
    for start in sorted(edges):
        if state.get(start):
            continue
        stack = [(start, iter(edges[start]))]
        path = [start]
        state[start] = 1
        while stack:
            node, children = stack[-1]
            for child in children:
                if state.get(child) == 1:
                    return path[path.index(child):] + [child]
                if not state.get(child):
                    state[child] = 1
                    path.append(child)
                    stack.append((child, iter(edges[child])))
                    break
            else:
                state[node] = 2
                stack.pop()
                path.pop()
    return None


def test_the_package_has_no_import_cycle():
    _, graph = import_graph()
    assert len(graph) > 50, "the walk found too few modules"
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


# the layers, bottom first (docs/design.md, "Layers"): a module imports only from its own layer or
# the ones below it. The package's __init__ (mbd_ros.load, the public names) and the module-path
# aliases (aliases.py) sit on top.
LAYERS = [
    ("mbd_ros.errors", "mbd_ros.constants", "mbd_ros.interfaces"),
    ("mbd_ros.inputs",),
    ("mbd_ros.model",),
    ("mbd_ros.kernels",),
    ("mbd_ros.fastcall", "mbd_ros.codegen"),
    ("mbd_ros.robot",),
    ("mbd_ros.simulation",),
    ("mbd_ros.sweep",),
    ("mbd_ros.nodes",),
    ("mbd_ros.cli",),
    ("mbd_ros", "mbd_ros.aliases"),
]


def layer_of(module):
    """Index in LAYERS of the longest prefix that names `module`'s folder or module."""
    best, level = "", None
    for index, names in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and len(name) > len(best):
                best, level = name, index
    return level


def test_every_module_has_a_layer_and_imports_only_downward():
    modules, graph = import_graph()
    unplaced = [m for m in modules if layer_of(m) is None]
    assert not unplaced, f"modules outside the layers: {unplaced}"
    upward = [f"{module} ({LAYERS[layer_of(module)][0]}) imports {target} "
              f"({LAYERS[layer_of(target)][0]}) at line {line}"
              for module, imports in graph.items()
              for target, _, line in imports
              if target in modules and layer_of(target) > layer_of(module)]
    assert not upward, "\n".join(upward)


def test_no_module_imports_a_private_name_from_another():
    _, graph = import_graph()
    offences = [f"{module}:{line} imports {name} from {target}"
                for module, imports in graph.items()
                for target, names, line in imports
                for name in names
                if name.startswith("_") and not name.startswith("__") and target != module]
    assert not offences, "\n".join(offences)


@pytest.mark.parametrize("source, expected", [
    ("from .b import x\n", "b"), ("from .b import _x\n", "private"),
    ("def f():\n    from .b import x\n", "b")])
def test_the_walk_sees_what_it_must(tmp_path, source, expected):
    """The checks would fail on a cycle or a private import, also inside a function."""
    modules = {"mbd_ros.a": tmp_path / "a.py", "mbd_ros.b": tmp_path / "b.py"}
    modules["mbd_ros.a"].write_text(source)
    modules["mbd_ros.b"].write_text("from .a import y\n")
    graph = {m: imports_of(m, p, modules) for m, p in modules.items()}
    if expected == "private":
        assert graph["mbd_ros.a"] == [("mbd_ros.b", ("_x",), 1)]
    assert find_cycle(graph) in (["mbd_ros.a", "mbd_ros.b", "mbd_ros.a"],
                                 ["mbd_ros.b", "mbd_ros.a", "mbd_ros.b"])


def test_documented_module_paths_of_earlier_versions_still_import():
    """docs and earlier versions name mbd_ros.plant, .drives, .limits, .contact,
    .point_trajectory, .loops, .simulation: they import, as the modules that own the code now."""
    import mbd_ros
    from mbd_ros.plant import Plant
    from mbd_ros.simulation import Simulator, SimulationDiverged, DEFAULT_MAX_STEP  # noqa: F401
    from mbd_ros.loops import LOOP_RESIDUAL_WARNING, LoopResidualWarning
    from mbd_ros.drives import POSITION  # noqa: F401
    from mbd_ros.limits import JointLimits
    from mbd_ros.contact import GroundContact  # noqa: F401
    from mbd_ros.point_trajectory import PointTrajectory  # noqa: F401
    import mbd_ros.simulation.plant as plant
    import mbd_ros.robot.constraints as constraints
    import mbd_ros.simulation.limits as limits
    assert Plant is plant.Plant and JointLimits is limits.JointLimits
    assert LOOP_RESIDUAL_WARNING == constraints.LOOP_RESIDUAL_WARNING
    assert LoopResidualWarning is constraints.LoopResidualWarning
    import importlib
    assert importlib.import_module("mbd_ros.loops") is constraints
    assert mbd_ros.Robot is importlib.import_module("mbd_ros.robot").Robot


def test_submodules_of_a_moved_package_import_as_the_new_modules():
    """docs/flexible.md cites mbd_ros.flexible.modal (the package moved to
    mbd_ros.model.flexible): the path finder found modal.py in the new folder and loaded it a
    second time as mbd_ros.flexible.modal, whose relative imports reach beyond the top-level
    package (ImportError). In a fresh process, as a user's script would import it."""
    assert_runs_without_warnings(
        "import mbd_ros.flexible.modal as a\n"
        "import mbd_ros.model.flexible.modal as b\n"
        "assert a is b and a.MAX_MODAL_NODES > 0\n"
        "from mbd_ros.flexible.build import build_flexible\n"
        "import mbd_ros.model.flexible.build as c\n"
        "assert build_flexible is c.build_flexible\n")


def assert_runs_without_warnings(code):
    """`code` runs in a fresh interpreter under -W error."""
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]


def test_an_old_module_path_leaves_the_module_its_own_spec():
    """Importing an old path must not rename the module that owns the code: its __spec__
    stays its own, so relative imports inside it raise no ImportWarning (an error under
    `-W error`, which failed the closed-loop tests once mbd_ros.loops had been imported)."""
    assert_runs_without_warnings(
        "import mbd_ros, mbd_ros.loops, mbd_ros.flexible.spec\n"
        "import mbd_ros.robot.constraints as c, mbd_ros.inputs.flexible as f\n"
        "assert c.__spec__.name == 'mbd_ros.robot.constraints', c.__spec__.name\n"
        "assert f.__spec__.name == 'mbd_ros.inputs.flexible', f.__spec__.name\n"
        "import importlib; importlib.reload(c)\n")


def test_the_command_line_runs_as_a_module():
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "mbd_ros.cli", "--help"], capture_output=True,
                         text=True, timeout=120, cwd=PACKAGE.parent)
    assert out.returncode == 0 and "mbd-ros" in out.stdout + out.stderr, out.stderr[-2000:]
