"""Locate the package's data: config/, urdf/, launch/, rviz/.

The same code runs from a source checkout (``pip install -e .``), from a
``colcon build`` install space, from a ``colcon build --symlink-install``
space and from a plain wheel install, so :func:`share_dir` tries, in order:

1. the environment variable ``PKM_CONTROL_SHARE`` (an explicit override; if it
   is set but not a directory that is an error, not a fall-through);
2. the source tree ``Path(__file__).resolve().parents[3]`` if it holds
   ``package.xml`` and ``config/`` (editable and symlink installs, so edits to
   config/ and urdf/ take effect without reinstalling);
3. ``ament_index_python.get_package_share_directory('pkm_control')`` if that
   module imports (a sourced colcon or ROS 2 install space);
4. ``sys.prefix/share/pkm_control`` (``pip install .`` into a venv).

No ROS import happens here beyond the optional ament_index_python lookup.
:func:`config_path` and :func:`urdf_xacro_path` only build paths; whether the
file exists is for the caller to check (and report with its own error).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from ..errors import InvalidInputError

PACKAGE_NAME = 'pkm_control'
ENV_VAR = 'PKM_CONTROL_SHARE'

_ROBOT_NAME = re.compile(r'^[A-Za-z0-9_][A-Za-z0-9_.-]*$')


def _source_tree() -> Path:
    return Path(__file__).resolve().parents[3]


def share_dir() -> Path:
    """Return the directory holding config/, urdf/, launch/ (and rviz/).

    Raises FileNotFoundError naming every place searched.
    """
    override = os.environ.get(ENV_VAR)
    if override:
        path = Path(override).expanduser()
        if path.is_dir():
            return path.resolve()
        raise FileNotFoundError(
            f'{ENV_VAR}={override!r} is set but is not a directory')

    searched = [f'${ENV_VAR} (not set)']

    root = _source_tree()
    if (root / 'package.xml').is_file() and (root / 'config').is_dir():
        return root
    searched.append(f'source tree {root} (needs package.xml and config/)')

    try:
        from ament_index_python.packages import (
            PackageNotFoundError,
            get_package_share_directory,
        )
    except ImportError:
        searched.append('ament_index_python (not importable)')
    else:
        try:
            path = Path(get_package_share_directory(PACKAGE_NAME))
        except (PackageNotFoundError, LookupError, ValueError, OSError) as exc:
            prefixes = os.environ.get('AMENT_PREFIX_PATH', '')
            searched.append(
                f"ament index (AMENT_PREFIX_PATH={prefixes!r}: {exc})")
        else:
            if path.is_dir():
                return path
            searched.append(f'ament index share directory {path} (missing)')

    path = Path(sys.prefix) / 'share' / PACKAGE_NAME
    if path.is_dir():
        return path
    searched.append(f'{path} (missing)')

    raise FileNotFoundError(
        f'cannot find the {PACKAGE_NAME} share directory; searched: '
        + '; '.join(searched))


def _data_file(subdir: str, robot: str, suffix: str) -> Path:
    if not isinstance(robot, str) or not _ROBOT_NAME.match(robot):
        raise InvalidInputError(
            f'robot name must be a plain file stem like "stewart", got {robot!r}')
    return share_dir() / subdir / f'{robot}{suffix}'


def config_path(robot: str) -> Path:
    """Return ``<share>/config/<robot>.yaml`` (existence is the caller's check)."""
    return _data_file('config', robot, '.yaml')


def urdf_xacro_path(robot: str) -> Path:
    """Return ``<share>/urdf/<robot>.urdf.xacro`` (existence is the caller's check)."""
    return _data_file('urdf', robot, '.urdf.xacro')
