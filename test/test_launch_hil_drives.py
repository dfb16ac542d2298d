"""launch/hil_demo.launch.py's `drives` argument, run on the stand-ins of launch / launch_ros of
test_launch_plant_args.py (the launch wheels have no PyPI release): for the sample arm7 the
plant gets config/arm7_drives.yaml after arm7_simulate.yaml by default (the realistic drives of
docs/plant.md "Drive models"), and not with drives:=ideal nor for another robot; the file's
parameters are the documented ones and each is a parameter the node declares."""
from __future__ import annotations

import importlib.util
import sys

import pytest
import yaml

from ros_harness import CONFIG, REPO, URDF
from test_launch_plant_args import stand_ins


def run_launch_file(monkeypatch, name, values):
    """(declared arguments, the nodes' keyword arguments) of launch/<name> run on the
    stand-ins of launch / launch_ros of test_launch_plant_args.py."""
    started = []
    declared = stand_ins(monkeypatch, values, started)
    sys.modules["launch.actions"].LogInfo = lambda **kw: kw
    sys.modules["launch_ros.actions"].Node = lambda **kw: started.append(kw) or kw
    spec = importlib.util.spec_from_file_location(name.replace(".", "_"),
                                                  REPO / "launch" / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for action in module.generate_launch_description():
        if hasattr(action, "function"):
            action.function(object())
    return declared, started


def run_hil_launch(monkeypatch, values):
    return run_launch_file(monkeypatch, "hil_demo.launch.py", values)


def plant_files(started):
    plant = next(kw for kw in started if kw.get("executable") == "forward_dynamics")
    return [p for p in plant["parameters"] if isinstance(p, str)]


def test_the_sample_arm_gets_the_realistic_drives_by_default(monkeypatch):
    declared, started = run_hil_launch(monkeypatch, {})
    default, _, choices = declared["drives"]
    assert default == "realistic" and choices == ["realistic", "ideal"]
    assert plant_files(started) == [str(CONFIG / "arm7_simulate.yaml"),
                                    str(CONFIG / "arm7_drives.yaml")]
    _, started = run_hil_launch(monkeypatch, {"drives": "ideal"})
    assert plant_files(started) == [str(CONFIG / "arm7_simulate.yaml")]
    _, started = run_hil_launch(monkeypatch, {"urdf": str(URDF / "gantry.urdf")})
    assert plant_files(started) == []   # another robot: the nodes' defaults (exact plant)


def test_the_realistic_drives_file_sets_declared_parameters():
    from mbd_ros.nodes.plant_drives import PlantDrives
    names = []

    class Recorder(PlantDrives):
        def declare(self, name, *args, **kwargs):
            names.append(name)
    Recorder().declare_drive_parameters()
    values = yaml.safe_load((CONFIG / "arm7_drives.yaml").read_text())["/**"]["ros__parameters"]
    assert set(values) <= set(names), set(values) - set(names)
    assert values["drive_model"] == "pd" and values["measurement_delay_cycles"] == 1


def test_the_namespace_argument_puts_the_three_nodes_in_it(monkeypatch):
    """docs/nodes.md lists `namespace` for hil_demo.launch.py as for the other two launch files
    (it had none: the nodes were always at the root). Default '': the root, as before; the
    remappings between the nodes are relative, so they stay inside the namespace."""
    declared, started = run_hil_launch(monkeypatch, {})
    assert declared["namespace"][0] == ""
    assert [kw["namespace"] for kw in started] == ["", "", ""]
    _, started = run_hil_launch(monkeypatch, {"namespace": "robot1"})
    assert sorted(kw["executable"] for kw in started) == ["forward_dynamics", "inverse_dynamics",
                                                          "reference_publisher"]
    assert all(kw["namespace"] == "robot1" for kw in started)
    for kw in started:
        for _, target in kw.get("remappings", []):
            assert not target.startswith("/"), target


@pytest.mark.parametrize("name, arguments", [
    ("hil_demo.launch.py", ("params_file", "controller_params_file", "reference_params_file")),
    ("task_space.launch.py", ("params_file", "controller_params_file"))])
def test_the_demos_resolve_their_parameter_files_and_refuse_missing_ones(monkeypatch, name,
                                                                        arguments):
    """A missing params file was passed on to launch_ros, which only warned and started the
    node without it (an outside launch audit); a relative one was taken against the current
    directory. Now, as in forward_dynamics.launch.py: relative paths in the share directory, a
    missing file a ValueError naming the argument."""
    for argument in arguments:
        _, started = run_launch_file(monkeypatch, name, {argument: "config/arm7_simulate.yaml"})
        files = [p for kw in started for p in kw["parameters"] if isinstance(p, str)]
        assert str(CONFIG / "arm7_simulate.yaml") in files, (argument, files)
        with pytest.raises(ValueError, match="params_file: 'config/nope.yaml' not found"):
            run_launch_file(monkeypatch, name, {argument: "config/nope.yaml"})


@pytest.mark.parametrize("name", ["hil_demo.launch.py", "task_space.launch.py"])
def test_a_node_that_exits_ends_the_demo(monkeypatch, name):
    """Each node's on_exit is a Shutdown unless the launch is already shutting down: a
    controller that failed to configure left the plant simulating alone until Ctrl-C (an
    outside launch audit)."""
    _, started = run_launch_file(monkeypatch, name, {})
    assert started
    for kw in started:
        class Context:
            is_shutdown = False
        [(kind, options)] = kw["on_exit"](object(), Context())
        assert kind == "Shutdown" and options["reason"].endswith(" exited"), options
        Context.is_shutdown = True    # Ctrl-C: the launch is already ending, no second event
        assert kw["on_exit"](object(), Context()) is None


def test_an_unknown_urdf_is_refused_naming_the_argument(monkeypatch):
    """hil_demo.launch.py urdf:=nope.urdf failed with a bare '[Errno 2] No such file or
    directory: nope.urdf' from the launch process; forward_dynamics.launch.py started a node
    that then exited. Refused once, naming the argument and the places looked in."""
    from robot_args import robot_parameters
    with pytest.raises(ValueError, match=r"urdf: 'nope.urdf' is not a file \(looked for .*"
                                         r"nope.urdf, .*urdf/nope.urdf\); urdf:=none"):
        robot_parameters(urdf="nope.urdf", search_dirs=[str(URDF)])
    assert robot_parameters(urdf="gantry.urdf", search_dirs=[str(URDF)]) == \
        {"urdf_path": str(URDF / "gantry.urdf")}
    with pytest.raises(ValueError, match="urdf: 'nope.urdf' is not a file"):
        run_launch_file(monkeypatch, "hil_demo.launch.py", {"urdf": "nope.urdf"})
