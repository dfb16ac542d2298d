"""Build script of mbd_ros (ament_python: works with colcon and with plain pip)."""
from glob import glob
import os
import sys

from setuptools import Extension, find_packages, setup

package_name = 'mbd_ros'

# ROS 2 (Kilted) from PyPI wheels, for use outside a ROS 2 install. A ROS 2 workspace uses
# its own rclpy and messages instead, so these stay in an optional extra.
ROS_WHEELS = [
    'ros-rclpy==9.1.2',
    'ros-rmw-fastrtps-cpp==9.3.3',
    'ros-std-msgs==5.5.1',
    'ros-sensor-msgs==5.5.1',
    'ros-geometry-msgs==5.5.1',
    'ros-trajectory-msgs==5.5.1',
    'ros-diagnostic-msgs==5.5.1',
    'ros-lifecycle-msgs==2.3.0',
    'ros-action-msgs==2.3.0',    # ~/follow_joint_trajectory (rclpy.action; control_msgs below)
    # plant: ~/reset (std_srvs/Trigger) and ~/odom (nav_msgs/Odometry). tf2_msgs (for /tf)
    # and control_msgs (~/follow_joint_trajectory) have no wheel on PyPI: `mbd-ros
    # build-interfaces` builds them into the environment (the Makefile runs it after installing
    # this extra; README "Install notes").
    'ros-std-srvs==5.5.1',
    'ros-nav-msgs==5.5.1',
]


def fastcall_extension():
    """mbd_ros.fastcall._fastcall: C-level calls of the FD/ID kernels (mbd_ros/fastcall). Optional:
    without a C compiler or NumPy headers the package installs and runs through numba's
    dispatcher (a little slower per call)."""
    try:
        import numpy
    except ImportError:
        return []
    return [Extension('mbd_ros.fastcall._fastcall', ['mbd_ros/fastcall/_fastcall.c'],
                      include_dirs=[numpy.get_include()], optional=True,
                      # the same bits as the numba kernels it mirrors (kernels/rk4.py)
                      extra_compile_args=['-ffp-contract=off'])]


def share_files(subdir, patterns):
    """(share/mbd_ros/<subdir>, [files]) for the files that exist; None when there are none."""
    files = sorted(f for pattern in patterns for f in glob(os.path.join(subdir, pattern))
                   if os.path.isfile(f))
    return (os.path.join('share', package_name, subdir), files) if files else None


data_files = [
    ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
    ('share/' + package_name, ['package.xml']),
]
for entry in (share_files('urdf', ['*.urdf', '*.xacro']),
              share_files('launch', ['*.py', '*.xml', '*.yaml']),
              share_files('config', ['*.yaml', '*.xacro'])):
    if entry:
        data_files.append(entry)

NODES = ['forward_dynamics', 'inverse_dynamics', 'reference_publisher']
if any(command in sys.argv for command in ('bdist_wheel', 'editable_wheel')):
    # pip puts console scripts in <prefix>/bin, but launch_ros runs <prefix>/lib/mbd_ros/<node>
    # (colcon's setup.py install path already does, through setup.cfg): ship small wrappers.
    data_files.append(('lib/' + package_name, ['scripts/lib/' + node for node in NODES]))

setup(
    name=package_name,
    version='0.1.0',
    description='Fast multibody dynamics (URDF + closed loops, numba kernels) for ROS 2 and Python',
    license='Apache-2.0',
    python_requires='>=3.10',
    packages=find_packages(exclude=['test', 'test.*', 'bench', 'bench.*']),
    data_files=data_files,
    # the definitions `mbd-ros build-interfaces` compiles (mbd_ros/interfaces/build.py)
    package_data={'mbd_ros.interfaces': ['*/CMakeLists.txt', '*/package.xml', '*/COLCON_IGNORE',
                                         '*/LICENSE', '*/msg/*.msg', '*/action/*.action']},
    ext_modules=fastcall_extension(),
    install_requires=[
        'numpy',
        'scipy',
        'numba',
        'pyyaml',
        'lxml',
        'xacro',        # .xacro robot descriptions (mbd_ros.load, launch files)
    ],
    extras_require={
        'ros': ROS_WHEELS,
        # exudyn: flexible-link and suspension oracle; yourdfpy: URDF element-parsing oracle;
        # sympy: the seed-004 Lagrange equations; matplotlib: the plot commands' tests
        # pytest-xdist: `make test` runs the suite on two workers (test/conftest.py)
        'test': ['pytest', 'pytest-xdist', 'pin', 'example-robot-data', 'exudyn', 'yourdfpy',
                 'sympy', 'matplotlib', 'dask[distributed]', 'pyarrow'],
        'bench': ['pin', 'example-robot-data', 'exudyn'],
        'plot': ['matplotlib'],   # mbd-ros simulate/flex-demo/hil-demo --plot
        # mbd-ros sweep (mbd_ros/sweep): runs as dask.distributed tasks, results as Parquet, the
        # summary PNG with matplotlib
        'sweep': ['dask[distributed]', 'pyarrow', 'matplotlib'],
    },
    zip_safe=True,
    entry_points={
        'console_scripts': [
            'mbd-ros = mbd_ros.cli:main',
            'forward_dynamics = mbd_ros.nodes.forward_dynamics:main',
            'inverse_dynamics = mbd_ros.nodes.inverse_dynamics:main',
            'reference_publisher = mbd_ros.nodes.reference_publisher:main',
        ],
    },
)
