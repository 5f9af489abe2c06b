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

:func:`read_user_yaml` reads a YAML file a user names (a parameter set, a
controller config, a CANopen config) and :func:`bounded_yaml` a YAML text (a
goal message): bounded in size and in the nesting of its flow collections
before it is parsed, so a hostile one is refused with an InvalidInputError,
never a RecursionError or an exhausted memory.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import numpy as np
import yaml

from ..errors import InvalidInputError

PACKAGE_NAME = 'pkm_control'
ENV_VAR = 'PKM_CONTROL_SHARE'

_ROBOT_NAME = re.compile(r'^[A-Za-z0-9_][A-Za-z0-9_.-]*$')
#: a user's YAML file longer than this is refused before parsing (the largest shipped one, controllers.yaml, has
#: 30 kB; a base-parameter set of the largest robot a few kB)
MAX_YAML_BYTES = 4 * 2 ** 20
#: the deepest nesting of flow collections ([...], {...}) in a user's YAML file (a config needs 3)
MAX_YAML_DEPTH = 32
_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"|\'[^\']*\'')


def flow_depth(text: str) -> int:
    """Deepest nesting of [ and { outside quoted strings (vectorized: a running sum over the characters)."""
    b = np.frombuffer(_QUOTED.sub("", text).encode("utf-8", "replace"), np.uint8)
    step = np.isin(b, (91, 123)).astype(np.int64) - np.isin(b, (93, 125))
    return int(np.cumsum(step).max(initial=0))


def bounded_yaml(text: str, what: str, max_bytes: int = MAX_YAML_BYTES, max_depth: int = MAX_YAML_DEPTH,
                 error: type[Exception] = InvalidInputError):
    """The document of the YAML (or JSON) ``text`` a user gives (``what`` names it in the messages).

    At most ``max_bytes`` (UTF-8) and ``max_depth`` nested flow collections are accepted before parsing (the
    pure-Python safe loader recurses once per level: 100,000 nested ``[`` raise a RecursionError, a 32,000-deep
    bracket bomb takes it seconds, and libyaml's loader crashes on one), and a recursion error of the loader
    (nested block collections) or a scalar it cannot build is a refusal too: each an InvalidInputError. Text that
    is not YAML raises ``error`` (a model's own config: InvalidModelError).
    """
    if len(text) > max_bytes or len(text.encode('utf-8', 'replace')) > max_bytes:   # characters <= bytes
        raise InvalidInputError(f'{what} has more than {max_bytes} bytes (the limit)')
    depth = flow_depth(text)
    if depth > max_depth:
        raise InvalidInputError(f'{what} nests {depth} brackets deep (limit {max_depth})')
    try:
        return yaml.safe_load(text)
    except RecursionError as exc:
        raise InvalidInputError(f'{what} nests its collections too deeply to parse') from exc
    except yaml.YAMLError as exc:
        raise error(f'{what} is not valid YAML/JSON: {str(exc)[:300]}') from exc
    except ValueError as exc:       # a scalar the loader resolves but cannot build: an int of 5000 digits, 2020-13-45
        raise InvalidInputError(f'{what} holds a value YAML cannot read: {str(exc)[:300]}') from exc


def read_user_yaml(path, what: str, error: type[Exception] = InvalidInputError):
    """The document of the YAML file ``path`` a user names (``what`` says which, for the messages): read and
    bounded as bounded_yaml bounds a text (MAX_YAML_BYTES, MAX_YAML_DEPTH), at most one byte more than the limit
    read. A file that cannot be read (missing, a directory, not UTF-8) or is not YAML raises ``error``.
    """
    path = os.fspath(path)
    try:
        with open(path, 'rb') as f:
            data = f.read(MAX_YAML_BYTES + 1)
        # past the limit the cut may split a character: such a text is refused for its size whatever it holds
        text = data.decode('utf-8', 'strict' if len(data) <= MAX_YAML_BYTES else 'replace')
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f'{what} {path!r} cannot be read: {exc}') from exc
    return bounded_yaml(text, f'{what} {path!r}', error=error)


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
