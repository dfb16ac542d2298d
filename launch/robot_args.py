"""The launch files' robot arguments -> node parameters (imported by the *.launch.py files next
to it, and by test/test_nodes_robot_sources.py to start the nodes exactly as they do).

Self-contained on purpose: importing the mbd_ros package would load numba and its kernels into
the launch process (seconds, more on a busy machine). Only the standard library, PyYAML and,
for .xacro files, mbd_ros/inputs/xacro_process.py (loaded by its path, standard library only), which
runs the xacro package in a child process bounded in time and memory.

robot_parameters(robot_description, urdf, xacro_args, search_dirs), first match wins:
- robot_description (URDF XML text)   -> {'robot_description': xml}
- urdf = a .xacro path (+ xacro_args) -> {'robot_description': expanded xml}
- urdf = a URDF path                  -> {'urdf_path': path}
  (a path that is no file, also in search_dirs: ValueError naming the argument)
- none                                -> {} (the nodes wait for the robot_description topic)

robot_arguments() declares the launch arguments this reads (robot_description, urdf, xacro_args,
closures), and robot_from_launch(context) reads them back: the shared part of every launch file.

`urdf:=none` (NO_URDF, any case) means no URDF, as an empty value does: `ros2 launch` refuses
`urdf:=''` on its command line, so an empty default could not be restored from there.

The plant's arguments (forward_dynamics.launch.py), as plain functions tested without launch:
- params_file_path(params_file, share): '' -> None; a relative path is resolved in the
  package's share directory; a file that does not exist is an error (ValueError naming
  params_file and the paths tried), never silently ignored;
- plant_overrides(use_sim_time, publish_clock, initial_positions): node parameters from the
  text of the launch arguments ('' leaves a parameter to the params file or the default);
- topic_remappings(...): (from, to) remappings of the command and state topics.
"""
import os
import shlex
import sys
import xml.etree.ElementTree as ElementTree

ONE_DOF = ('revolute', 'continuous', 'prismatic')
NO_URDF = 'none'   # urdf:=none: no URDF (ros2 launch refuses urdf:='')
# launch argument -> the node's topic it remaps (forward_dynamics.launch.py)
PLANT_TOPICS = {
    'joint_states_topic': 'joint_states',
    'joint_commands_topic': 'joint_commands',
    'effort_commands_topic': '~/effort_commands',
    'position_commands_topic': '~/position_commands',
    'velocity_commands_topic': '~/velocity_commands',
}
MAX_FILE_BYTES = 32 << 20   # the nodes' cap on a URDF (mbd_ros.urdf.MAX_URDF_BYTES)


def parse_xacro_args(text):
    """'a:=1 b:="x y"' -> {'a': '1', 'b': 'x y'}; ValueError naming a malformed entry."""
    mappings = {}
    for item in shlex.split(text or ''):
        name, sep, value = item.partition(':=')
        if not sep or not name:
            raise ValueError(f'xacro_args: {item!r} is not of the form name:=value')
        mappings[name] = value
    return mappings


def expand_xacro(path, mappings=None, timeout=None, max_memory=None):
    """URDF XML of a xacro file, expanded by mbd_ros/inputs/xacro_process.py in a child process bounded
    in time and memory (the file's ${...} expressions are code); ValueError naming the file if
    xacro is missing, fails or exceeds a limit."""
    return _xacro_process().expand(path, mappings, timeout=timeout, max_memory=max_memory)


def _xacro_process():
    """mbd_ros/inputs/xacro_process.py, loaded by its path: it imports nothing of the package,
    while `import mbd_ros.inputs.xacro_process` would run mbd_ros/__init__.py (numba, seconds)."""
    import importlib.util
    module = (sys.modules.get('mbd_ros.inputs.xacro_process')
              or sys.modules.get('_mbd_ros_xacro_process'))
    if module is not None:
        return module
    package = importlib.util.find_spec('mbd_ros')   # finds, does not import
    if package is None or not package.submodule_search_locations:
        raise ValueError('expanding a xacro file needs the mbd_ros package '
                         '(mbd_ros/inputs/xacro_process.py)')
    path = os.path.join(list(package.submodule_search_locations)[0], 'inputs',
                        'xacro_process.py')
    spec = importlib.util.spec_from_file_location('_mbd_ros_xacro_process', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules['_mbd_ros_xacro_process'] = module
    return module


def resolve_path(path, search_dirs=()):
    """`path` if it exists (or is absolute), else the first search_dirs/path that exists."""
    if os.path.exists(path) or os.path.isabs(path):
        return path
    for directory in search_dirs:
        candidate = os.path.join(str(directory), path)
        if os.path.exists(candidate):
            return candidate
    return path


def existing_file(name, text, search_dirs=(), hint=''):
    """resolve_path of the launch argument `name` = text, which must be a file: ValueError
    naming the argument and the places looked in otherwise (refused by the launch file rather
    than by every node it would start)."""
    text = text.strip()
    path = resolve_path(text, search_dirs)
    if not os.path.isfile(path):
        places = [os.path.abspath(text)] + \
            [os.path.join(str(d), text) for d in search_dirs if not os.path.isabs(text)]
        raise ValueError(f'{name}: {text!r} is not a file (looked for {", ".join(places)})'
                         + hint)
    return path


def robot_parameters(robot_description='', urdf='', xacro_args='', search_dirs=()):
    """Node parameters for the robot from the launch arguments (see the module docstring)."""
    if robot_description and robot_description.strip():
        return {'robot_description': robot_description}
    mappings = parse_xacro_args(xacro_args)
    if urdf and urdf.strip().lower() == NO_URDF:
        urdf = ''
    if urdf and urdf.strip():
        path = existing_file('urdf', urdf, search_dirs, f'; urdf:={NO_URDF} waits for the '
                             'robot_description topic')
        if path.lower().endswith('.xacro'):
            return {'robot_description': expand_xacro(path, mappings)}
        if mappings:
            raise ValueError(f'xacro_args given, but urdf ({urdf}) is not a .xacro file')
        return {'urdf_path': path}
    if mappings:
        raise ValueError('xacro_args given without a xacro file in the urdf argument')
    return {}


def params_file_path(params_file, share):
    """The parameter file of the `params_file` launch argument: None for '', an absolute path
    as is, a relative one in the package's share directory; ValueError if it does not exist."""
    text = (params_file or '').strip()
    if not text:
        return None
    path = text if os.path.isabs(text) else os.path.join(str(share), text)
    if not os.path.isfile(path):
        where = path if os.path.isabs(text) else f'{path} (relative paths are resolved in the ' \
            f'package share directory {share})'
        raise ValueError(f'params_file: {text!r} not found: {where}')
    return path


def _bool_argument(name, text):
    value = text.strip().lower()
    if value not in ('true', 'false'):
        raise ValueError(f'{name}: {text!r} is not true or false')
    return value == 'true'


def parse_positions(text, name='initial_positions'):
    """'[0.1, -0.2]', '0.1 -0.2' or '0.1,-0.2' -> [0.1, -0.2]; '' -> None; ValueError naming the
    argument for anything that is not a list of finite numbers."""
    body = (text or '').strip()
    if not body:
        return None
    if body.startswith('[') and body.endswith(']'):
        body = body[1:-1]
    values = []
    for item in body.replace(',', ' ').split():
        try:
            x = float(item)
        except ValueError:
            raise ValueError(f'{name}: {item!r} is not a number (give e.g. "[0.0, -1.57]", in '
                             'the order of the `joints` parameter)') from None
        if x != x or x in (float('inf'), float('-inf')):
            raise ValueError(f'{name}: {item!r}: NaN and inf are refused')
        values.append(x)
    if not values:
        raise ValueError(f'{name}: {text!r} has no values')
    return values


def plant_overrides(use_sim_time='', publish_clock='', initial_positions=''):
    """Node parameters of the plant's launch arguments ('' leaves a parameter alone)."""
    overrides = {}
    if use_sim_time.strip():
        overrides['use_sim_time'] = _bool_argument('use_sim_time', use_sim_time)
    if publish_clock.strip():
        overrides['publish_clock'] = _bool_argument('publish_clock', publish_clock)
    positions = parse_positions(initial_positions)
    if positions is not None:
        overrides['initial_positions'] = positions
    return overrides


def topic_remappings(**topics):
    """[(node topic, new name)] for the non-empty arguments of PLANT_TOPICS (keyword = the
    launch argument's name)."""
    unknown = sorted(set(topics) - set(PLANT_TOPICS))
    if unknown:
        raise ValueError(f'unknown topic arguments {unknown}; known: {sorted(PLANT_TOPICS)}')
    return [(PLANT_TOPICS[name], value.strip()) for name, value in topics.items()
            if value and value.strip()]


def commanded_joints(robot, closures_path=''):
    """Joints a controller commands by default, from the robot parameters: the `actuated:` list
    of a closures file, else every 1-dof joint of the URDF (order is irrelevant: references
    are matched by name)."""
    if closures_path:
        actuated = _actuated(closures_path)
        if actuated:
            return actuated
    if 'robot_description' in robot:
        text = robot['robot_description'].strip().lstrip('\ufeff')
        where = 'robot_description'
    else:
        where = robot['urdf_path']
        if os.path.getsize(where) > MAX_FILE_BYTES:
            raise ValueError(f'{where}: more than {MAX_FILE_BYTES} bytes')
        with open(where, 'rb') as stream:
            text = stream.read().decode('utf-8', 'replace')
    if len(text) > MAX_FILE_BYTES or '<!DOCTYPE' in text or '<!ENTITY' in text:
        # the nodes refuse such a URDF (entities are never expanded); refuse it here too
        raise ValueError(f'{where}: too large, or with a DOCTYPE / entity declaration')
    root = ElementTree.fromstring(text)
    return [j.get('name') for j in root.findall('joint') if j.get('type') in ONE_DOF]


def _actuated(closures_path):
    """The `actuated:` names of a closures file, read from PyYAML's node graph without
    constructing anything: an alias bomb elsewhere in the file (the nodes refuse it with a
    ModelError) costs its text only here."""
    import yaml
    if os.path.getsize(closures_path) > MAX_FILE_BYTES:
        raise ValueError(f'{closures_path}: more than {MAX_FILE_BYTES} bytes')
    with open(closures_path, encoding='utf-8') as stream:
        try:
            root = yaml.compose(stream, Loader=yaml.SafeLoader)
        except (yaml.YAMLError, RecursionError) as exc:
            raise ValueError(f'{closures_path}: unreadable YAML ({type(exc).__name__})') from None
    if not isinstance(root, yaml.MappingNode):
        return []
    for key, value in root.value:
        if isinstance(key, yaml.ScalarNode) and key.value == 'actuated' and \
                isinstance(value, yaml.SequenceNode):
            return [str(item.value) for item in value.value if isinstance(item, yaml.ScalarNode)]
    return []


def robot_arguments(urdf_default='', urdf_description=None, closures_description=None):
    """DeclareLaunchArgument actions of the robot: robot_description, urdf, xacro_args,
    closures (imports launch, which only a launch file has)."""
    from launch.actions import DeclareLaunchArgument
    return [
        DeclareLaunchArgument(
            'robot_description', default_value='',
            description='URDF XML of the robot (takes precedence over urdf)'),
        DeclareLaunchArgument(
            'urdf', default_value=urdf_default,
            description=urdf_description or 'URDF or xacro file of the robot (empty or '
                                             f'"{NO_URDF}", with no robot_description: wait for '
                                             'the robot_description topic)'),
        DeclareLaunchArgument(
            'xacro_args', default_value='',
            description='arguments of a xacro file, "name:=value name:=value"'),
        DeclareLaunchArgument(
            'closures', default_value='',
            description=closures_description or 'YAML file declaring the loop closures of a '
                                                'closed-loop robot (empty: the robot is a tree)'),
    ]


def ends_the_launch(reason):
    """on_exit of a demo's node: a node that exits (a failed configure, a crash) ends the whole
    launch with `reason`, instead of leaving the others running without it. Not once the launch
    is shutting down (Ctrl-C): a second Shutdown event makes launch_ros shut its ROS adapter
    down again, which logs "Cannot shutdown a ROS adapter that is not running" as an error."""
    def on_exit(event, context):
        from launch.actions import Shutdown
        return None if context.is_shutdown else [Shutdown(reason=reason)]
    return on_exit


def launch_value(context, name):
    """The value of launch argument `name` in `context` (a string)."""
    from launch.substitutions import LaunchConfiguration
    return LaunchConfiguration(name).perform(context)


def robot_from_launch(context):
    """(robot parameters, the package's share directory) from the arguments of
    robot_arguments(); a relative urdf is looked up in the share directory's urdf/ too."""
    from launch_ros.substitutions import FindPackageShare
    share = FindPackageShare('mbd_ros').perform(context)
    robot = robot_parameters(launch_value(context, 'robot_description'),
                             launch_value(context, 'urdf'), launch_value(context, 'xacro_args'),
                             [os.path.join(share, 'urdf')])
    return robot, share
