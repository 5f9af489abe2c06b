"""ament_python build script of pkm_control (also used by `pip install -e .`).

Layout: the Python package lives in src/pkm_control ("src layout"); the data
directories below are installed under share/pkm_control/ keeping their
sub-directory structure.  Paths are relative to this file's directory, which is
the working directory for pip, `colcon build` (cwd = package source) and
`colcon build --symlink-install` (cwd = build/pkm_control, where colcon
symlinks setup.py, setup.cfg, src/pkm_control and every data file listed here).
"""

import os

from setuptools import find_packages, setup

package_name = 'pkm_control'

# Installed to share/pkm_control/<dir>/... if the directory exists.
DATA_DIRS = ('launch', 'config', 'urdf', 'rviz')
_SKIP_DIRS = {'__pycache__'}
_SKIP_SUFFIXES = ('.pyc', '.pyo', '~', '.swp', '.orig', '.rej')


def _data_files(directory):
    """Return (destination, [files]) pairs for every file below ``directory``."""
    pairs = []
    for root, dirs, files in os.walk(directory, followlinks=True):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith('.'))
        selected = sorted(
            os.path.join(root, f)
            for f in files
            if not f.startswith('.') and not f.endswith(_SKIP_SUFFIXES)
            # a file deleted from the source leaves a dangling symlink in the
            # --symlink-install build directory: skip it
            and os.path.exists(os.path.join(root, f))
        )
        if selected:
            pairs.append((os.path.join('share', package_name, root), selected))
    return pairs


data_files = [
    ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
    ('share/' + package_name, ['package.xml']),
]
for _directory in DATA_DIRS:
    data_files += _data_files(_directory)

setup(
    name=package_name,
    version='0.1.0',
    package_dir={'': 'src'},
    packages=find_packages('src', exclude=['test', 'test.*']),
    data_files=data_files,
    install_requires=['setuptools'],
    extras_require={'test': ['pytest']},
    python_requires='>=3.10',
    zip_safe=True,
    maintainer='pkm_control maintainers',
    maintainer_email='maintainers@users.noreply.a-seed-06943999.example',
    description='Model-based control of parallel kinematic machines with ROS 2 and pinocchio',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'pkm = pkm_control.cli:main',
            'trajectory_generator = pkm_control.nodes.executable:trajectory_generator',
            'inverse_kinematics = pkm_control.nodes.executable:inverse_kinematics',
            'computed_force = pkm_control.nodes.executable:computed_force',
            'joint_controller = pkm_control.nodes.executable:joint_controller',
            'hardware = pkm_control.nodes.executable:hardware',
        ],
        # the hardware kinds by name (pkm_control.plugins, hardware/plugin.py); another package adds its own here
        'pkm_control.hardware': [
            'sim = pkm_control.hardware.kinds:Sim',
            'mujoco = pkm_control.hardware.kinds:Mujoco',
            'canopen = pkm_control.hardware.kinds:Canopen',
            'topics = pkm_control.ros.hardware_io:Topics',
            'ros2_control = pkm_control.ros.hardware_io:Ros2Control',
        ],
    },
)
