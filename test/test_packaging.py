"""Packaging checks: package.xml, setup.py/setup.cfg, paths.py, colcon builds.

The colcon tests build the repository in a throw-away workspace
(<tmp>/src/pkm_control -> this checkout), once with `colcon build` and once
with `colcon build --symlink-install`, then check the install space the way a
user would use it: `source install/setup.bash` and import / run from there.
"""

import ast
import configparser
import importlib
import json
import os
import re
import runpy
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PKG = 'pkm_control'
DATA_DIRS = ('launch', 'config', 'urdf', 'rviz')
VENV_BIN = Path(sys.executable).parent


def _data_files_in(directory):
    """Files below REPO/directory that must be installed (same filter as setup.py)."""
    found = []
    root = REPO / directory
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != '__pycache__' and not d.startswith('.')]
        for f in files:
            if f.startswith('.') or f.endswith(('.pyc', '.pyo', '~', '.swp', '.orig', '.rej')):
                continue
            found.append((Path(dirpath) / f).relative_to(REPO).as_posix())
    return sorted(found)


@pytest.fixture(scope='module')
def setup_kwargs():
    """The keyword arguments setup.py passes to setuptools.setup()."""
    import setuptools

    captured = {}
    old_setup, old_cwd = setuptools.setup, os.getcwd()
    setuptools.setup = lambda **kw: captured.update(kw)
    try:
        os.chdir(REPO)
        runpy.run_path(str(REPO / 'setup.py'), run_name='__main__')
    finally:
        setuptools.setup = old_setup
        os.chdir(old_cwd)
    return captured


# --------------------------------------------------------------------------
# package.xml, setup.py, setup.cfg


def test_package_xml_declares_ament_python_and_dependencies(setup_kwargs):
    root = ET.parse(REPO / 'package.xml').getroot()
    assert root.tag == 'package' and root.get('format') == '3'
    assert root.findtext('name') == PKG
    assert root.findtext('version') == setup_kwargs['version']
    assert root.findtext('export/build_type') == 'ament_python'
    assert [e.text for e in root.findall('buildtool_depend')] == ['ament_python']
    assert root.find('maintainer').get('email')
    assert root.findtext('license')
    deps = {e.text for tag in ('depend', 'exec_depend') for e in root.findall(tag)}
    required = {
        'rclpy', 'std_msgs', 'sensor_msgs', 'geometry_msgs', 'trajectory_msgs',
        'std_srvs', 'diagnostic_msgs', 'rosgraph_msgs',
        'python3-numpy', 'python3-scipy', 'python3-yaml', 'python3-numba', 'python3-hypothesis', 'pinocchio', 'xacro',
    }
    assert required <= deps, f'missing in package.xml: {sorted(required - deps)}'
    # and no message package that nothing imports
    code = '\n'.join(p.read_text() for d in ('src', 'launch') for p in sorted((REPO / d).rglob('*.py')))
    unused = sorted(d for d in deps if d.endswith('_msgs') and not re.search(rf'^\s*(from|import) {d}\b', code, re.M))
    assert not unused, f'declared in package.xml but imported nowhere in src/ or launch/: {unused}'
    tests = {e.text for tag in ('depend', 'test_depend') for e in root.findall(tag)}
    assert 'python3-pytest' in tests

    catkin_pkg = pytest.importorskip('catkin_pkg.package', reason='catkin_pkg not installed')
    pkg = catkin_pkg.parse_package(str(REPO / 'package.xml'))  # validates the manifest
    assert pkg.name == PKG and pkg.package_format == 3


def test_setup_py_layout_and_entry_point(setup_kwargs):
    assert setup_kwargs['name'] == PKG
    assert setup_kwargs['package_dir'] == {'': 'src'}
    assert 'pkm = pkm_control.cli:main' in setup_kwargs['entry_points']['console_scripts']
    # every hardware kind's entry point names a HardwarePlugin of the sources (pkm_control.plugins)
    from pkm_control.hardware.plugin import HardwarePlugin
    for line in setup_kwargs['entry_points']['pkm_control.hardware']:
        name, _, target = (part.strip() for part in line.partition('='))
        module, _, attr = target.partition(':')
        assert issubclass(getattr(importlib.import_module(module), attr), HardwarePlugin), line
    # every directory of src/pkm_control holding Python files must be an
    # installed package, else `colcon build` (no symlinks) silently drops it
    expected = sorted(
        '.'.join(d.relative_to(REPO / 'src').parts)
        for d in [REPO / 'src' / PKG, *(REPO / 'src' / PKG).rglob('*')]
        if d.is_dir() and d.name != '__pycache__' and any(d.glob('*.py'))
    )
    missing_init = [p for p in expected if not (REPO / 'src' / p.replace('.', '/') / '__init__.py').exists()]
    assert not missing_init, f'directories with .py files but no __init__.py: {missing_init}'
    assert sorted(setup_kwargs['packages']) == expected


def test_setup_py_data_files_cover_data_directories(setup_kwargs):
    installed = {}
    for destination, files in setup_kwargs['data_files']:
        for f in files:
            installed[Path(f).as_posix()] = Path(destination).as_posix()
    assert installed.get(f'resource/{PKG}') == 'share/ament_index/resource_index/packages'
    assert installed.get('package.xml') == f'share/{PKG}'
    assert (REPO / 'resource' / PKG).is_file()
    for directory in DATA_DIRS:
        for rel in _data_files_in(directory):
            assert rel in installed, f'{rel} is not installed by setup.py'
            assert installed[rel] == f'share/{PKG}/{Path(rel).parent.as_posix()}'


def test_setup_cfg_puts_scripts_in_lib_pkg():
    cfg = configparser.ConfigParser()
    cfg.read(REPO / 'setup.cfg')
    assert cfg.get('develop', 'script_dir') == f'$base/lib/{PKG}'
    assert cfg.get('install', 'install_scripts') == f'$base/lib/{PKG}'


def test_ci_entry_point_is_executable():
    run = REPO / '.ci' / 'run'
    assert os.access(run, os.X_OK)
    assert 'make test' in run.read_text()


#: the layers, bottom to top (docs/architecture.md): a module imports only from its own layer and the ones below
LAYERS = (
    ("errors", "progress", "plugins", "process"),
    ("description",),
    ("kinematics",),
    ("dynamics",),
    ("trajectory",),
    ("control",),
    ("hardware",),
    ("ros",),
    ("identification",),
    ("viewer",),
    ("nodes",),
    ("graph",),
    ("benchmarks",),
    ("fuzz",),
    ("cli",),
)
#: where rclpy may be imported: the ROS side; below it the core is usable and testable without ROS
RCLPY_LAYERS = {"ros", "nodes", "graph", "benchmarks"}


def _layer(module: str) -> str:
    parts = module.split('.')
    return parts[1] if len(parts) > 1 else ''


def _imports():
    """(module, line, imported module) for every import of the package (lazy ones in functions too); an imported
    name that is a submodule counts as that submodule."""
    src = REPO / 'src'
    found = []
    for path in sorted((src / PKG).rglob('*.py')):
        parts = list(path.relative_to(src).with_suffix('').parts)
        is_pkg = parts[-1] == '__init__'
        module = '.'.join(parts[:-1] if is_pkg else parts)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found += [(module, node.lineno, a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = module.split('.') if is_pkg else module.split('.')[:-1]
                    base = base[:len(base) - node.level + 1]
                    target = '.'.join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ''
                for a in node.names:
                    sub = f'{target}.{a.name}'
                    is_module = (src / sub.replace('.', '/')).with_suffix('.py').exists() or \
                        (src / sub.replace('.', '/') / '__init__.py').exists()
                    found.append((module, node.lineno, sub if is_module else target))
    return found


def test_every_package_has_a_layer():
    packages = {d.name for d in (REPO / 'src' / PKG).iterdir() if d.is_dir() and (d / '__init__.py').exists()}
    modules = {p.stem for p in (REPO / 'src' / PKG).glob('*.py') if p.stem != '__init__'}
    layered = {name for layer in LAYERS for name in layer}
    assert packages | modules == layered, f'not in LAYERS: {sorted((packages | modules) - layered)}; ' \
        f'in LAYERS but not in the tree: {sorted(layered - packages - modules)}'


def test_imports_point_down_the_layers():
    rank = {name: i for i, layer in enumerate(LAYERS) for name in layer}
    upward = [f'{m}:{line} imports {t}' for m, line, t in _imports()
              if t.startswith(PKG + '.') and _layer(m) and _layer(t) and rank[_layer(t)] > rank[_layer(m)]]
    assert not upward, 'imports that point up the layers:\n' + '\n'.join(upward)


def test_no_import_cycles():
    """No two modules of the package import each other, directly or through others (lazy imports count too)."""
    graph = {}
    for m, _, t in _imports():
        if t.startswith(PKG + '.') and t != m:
            graph.setdefault(m, set()).add(t)
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in list(graph):
        if v not in index:
            visit(v)
    assert not cycles, f'import cycles: {cycles}'


def test_rclpy_only_on_the_ros_side():
    offenders = [f'{m}:{line}' for m, line, t in _imports()
                 if (t == 'rclpy' or t.startswith('rclpy.')) and _layer(m) not in RCLPY_LAYERS]
    assert not offenders, f'rclpy imported outside {sorted(RCLPY_LAYERS)}: {offenders}'


def test_the_core_imports_without_rclpy():
    """Importing every core package leaves rclpy unloaded: the model stack and the control logic work without ROS."""
    core = [name for layer in LAYERS for name in layer if name not in RCLPY_LAYERS | {'fuzz', 'cli'}]
    code = ('import importlib, pkgutil, sys\n'
            f'for name in {core!r}:\n'
            f'    mod = importlib.import_module("{PKG}." + name)\n'
            '    for info in pkgutil.walk_packages(getattr(mod, "__path__", []), mod.__name__ + "."):\n'
            '        importlib.import_module(info.name)\n'
            'print(sorted(m for m in sys.modules if m == "rclpy" or m.startswith("rclpy.")))\n')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == '[]', f'the core loaded rclpy: {out.stdout}'


#: the hasattr calls src may hold, (module below the package, attribute) -> how many at most in one module: each asks
#: about an object from outside the package. A module name covers its submodules (cli: cli.py or a cli/ package).
#: Anything of ours declares what it offers instead (a base class with defaults, issue 20)
HASATTR_ALLOWED = {
    ('cli', 'tolist'): 2,                                # json.dumps default: numpy arrays and scalars
    ('graph.tools', 'get_fields_and_field_types'): 1,    # a ROS message instance (rosidl)
    ('graph.tools', 'tolist'): 2,                        # numpy arrays, array.array of message fields
    ('viewer.animation', 'do_3d_projection'): 1,         # matplotlib's 3D artists
}


def test_hasattr_only_on_outside_objects():
    """No capability probing with hasattr on the package's own objects: only the allow-listed calls remain."""
    src = REPO / 'src' / PKG
    count, refused = {}, []
    for path in sorted(src.rglob('*.py')):
        parts = list(path.relative_to(src).with_suffix('').parts)
        module = '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == 'hasattr'):
                continue
            arg = node.args[1] if len(node.args) == 2 else None
            attr = arg.value if isinstance(arg, ast.Constant) else None
            key = next((k for k in HASATTR_ALLOWED
                        if k[1] == attr and (module == k[0] or module.startswith(k[0] + '.'))), None)
            if key is None:
                refused.append(f'{module}:{node.lineno} hasattr(..., {attr!r})')
            else:
                count[module, key] = count.get((module, key), 0) + 1
    assert not refused, 'hasattr on our own objects (declare the attribute on a base class instead):\n' + \
        '\n'.join(refused)
    over = {f'{m}: {k[1]}': n for (m, k), n in count.items() if n > HASATTR_ALLOWED[k]}
    assert not over, f'more hasattr calls than allowed: {over}'


# --------------------------------------------------------------------------
# paths.py


def test_share_dir_is_source_tree_in_a_checkout(monkeypatch):
    from pkm_control.description import paths

    monkeypatch.delenv('PKM_CONTROL_SHARE', raising=False)
    if Path(paths.__file__).resolve().parents[3] != REPO:
        pytest.skip(f'pkm_control imported from {paths.__file__}, not from this checkout')
    if not (REPO / 'config').is_dir():
        pytest.skip('no config/ in this checkout yet: the source tree is not a share dir')
    assert paths.share_dir() == REPO


def test_share_dir_env_override(monkeypatch, tmp_path):
    from pkm_control.description import paths

    (tmp_path / 'config').mkdir()
    (tmp_path / 'config' / 'toy.yaml').write_text('a: 1\n')
    (tmp_path / 'urdf').mkdir()
    (tmp_path / 'urdf' / 'toy.urdf.xacro').write_text('<robot/>\n')
    monkeypatch.setenv('PKM_CONTROL_SHARE', str(tmp_path))
    assert paths.share_dir() == tmp_path.resolve()
    assert paths.config_path('toy') == tmp_path.resolve() / 'config' / 'toy.yaml'
    assert paths.urdf_xacro_path('toy') == tmp_path.resolve() / 'urdf' / 'toy.urdf.xacro'
    assert paths.config_path('nope') == tmp_path.resolve() / 'config' / 'nope.yaml'
    with pytest.raises(ValueError, match='robot name'):  # InvalidInputError
        paths.config_path('../secret')
    monkeypatch.setenv('PKM_CONTROL_SHARE', str(tmp_path / 'missing'))
    with pytest.raises(FileNotFoundError, match='PKM_CONTROL_SHARE'):
        paths.share_dir()


def test_share_dir_ament_index_then_prefix_then_error(monkeypatch, tmp_path):
    from pkm_control.description import paths

    monkeypatch.delenv('PKM_CONTROL_SHARE', raising=False)
    monkeypatch.setattr(paths, '_source_tree', lambda: tmp_path / 'no_source')
    monkeypatch.setattr(sys, 'prefix', str(tmp_path / 'prefix'))
    monkeypatch.delenv('AMENT_PREFIX_PATH', raising=False)
    with pytest.raises(FileNotFoundError) as err:
        paths.share_dir()
    for place in ('PKM_CONTROL_SHARE', 'no_source', 'ament', str(tmp_path / 'prefix')):
        assert place in str(err.value)

    (tmp_path / 'prefix' / 'share' / PKG).mkdir(parents=True)
    assert paths.share_dir() == tmp_path / 'prefix' / 'share' / PKG

    pytest.importorskip('ament_index_python', reason='ament_index_python not installed')
    ament = tmp_path / 'ament'
    (ament / 'share' / 'ament_index' / 'resource_index' / 'packages').mkdir(parents=True)
    (ament / 'share' / 'ament_index' / 'resource_index' / 'packages' / PKG).touch()
    (ament / 'share' / PKG).mkdir(parents=True)
    monkeypatch.setenv('AMENT_PREFIX_PATH', str(ament))
    assert paths.share_dir() == ament / 'share' / PKG


# --------------------------------------------------------------------------
# colcon build in a temporary workspace, both install modes


def _colcon_command():
    """colcon of this interpreter's environment, or None with the reason."""
    exe = shutil.which('colcon', path=str(VENV_BIN))
    try:
        import colcon_core  # noqa: F401
        import colcon_ros  # noqa: F401
    except ImportError as exc:
        return None, f'colcon with colcon-ros is not installed for {sys.executable} ({exc})'
    if exe:
        return [exe], None
    # e.g. colcon from apt seen through --system-site-packages: same modules,
    # no script in the venv's bin
    return [sys.executable, '-c', 'import sys; from colcon_core.command import main; sys.exit(main())'], None


def _clean_env():
    """The caller's environment minus any other pkm_control build or install."""
    env = dict(os.environ)
    env.pop('PKM_CONTROL_SHARE', None)
    for var in ('AMENT_PREFIX_PATH', 'COLCON_PREFIX_PATH', 'PYTHONPATH', 'CMAKE_PREFIX_PATH'):
        if var in env:
            kept = [p for p in env[var].split(os.pathsep) if p and PKG not in Path(p).parts]
            env[var] = os.pathsep.join(kept)
            if not kept:
                del env[var]
    # colcon, pytest and setuptools run with the interpreter of this venv
    env['PATH'] = str(VENV_BIN) + os.pathsep + env.get('PATH', '')
    return env


PROBE = r'''
import importlib.metadata as md, json, sys
import pkm_control, pkm_control.description.paths as paths
dist = md.distribution("pkm_control")
print(json.dumps({
    "file": pkm_control.__file__,
    "share": str(paths.share_dir()),
    "entry_points": sorted(f"{e.name} = {e.value}" for e in dist.entry_points
                           if e.group == "console_scripts"),
    "hardware": sorted(__import__("pkm_control.hardware.plugin", fromlist=["hardware_names"]).hardware_names()),
    "rclpy_loaded": "rclpy" in sys.modules,
}))
'''


@pytest.fixture(scope='module', params=['copy', 'symlink'], ids=['colcon-build', 'colcon-build-symlink-install'])
def colcon_ws(request, tmp_path_factory):
    cmd, reason = _colcon_command()
    if cmd is None:
        pytest.skip(reason)
    if shutil.which('bash') is None:
        pytest.skip('bash is needed to source install/setup.bash')
    ws = tmp_path_factory.mktemp(f'ws_{request.param}')
    (ws / 'src').mkdir()
    (ws / 'src' / PKG).symlink_to(REPO, target_is_directory=True)
    env = _clean_env()
    build = cmd + ['build', '--event-handlers', 'console_direct-', 'summary-']
    if request.param == 'symlink':
        build.append('--symlink-install')
    proc = subprocess.run(build, cwd=ws, env=env, capture_output=True, text=True, timeout=300)
    log = proc.stdout + proc.stderr
    if proc.returncode:
        logs = sorted((ws / 'log').glob('latest_build/pkm_control/stdout_stderr.log'))
        log += ''.join(p.read_text() for p in logs)
    assert proc.returncode == 0, f'{" ".join(build)} failed:\n{log}'

    def in_ws(script):
        return subprocess.run(
            ['bash', '-c', f'source install/setup.bash && {script}'],
            cwd=ws, env=env, capture_output=True, text=True, timeout=120)

    return request.param, ws, in_ws


@pytest.mark.packaging
def test_colcon_install_space_layout(colcon_ws):
    mode, ws, _ = colcon_ws
    prefix = ws / 'install' / PKG
    share = prefix / 'share' / PKG
    assert (share / 'package.xml').is_file()
    assert (prefix / 'share' / 'ament_index' / 'resource_index' / 'packages' / PKG).is_file()
    script = prefix / 'lib' / PKG / 'pkm'
    assert script.is_file() and os.access(script, os.X_OK), f'{script} missing ({mode})'
    assert not (prefix / 'bin').exists(), 'console scripts must go to lib/pkm_control'
    for directory in DATA_DIRS:
        files = _data_files_in(directory)
        if files:
            assert (share / directory).is_dir()
        for rel in files:
            assert (share / rel).is_file(), f'{rel} not installed to {share} ({mode})'
            if mode == 'symlink':
                assert (share / rel).resolve() == (REPO / rel).resolve()


@pytest.mark.packaging
def test_colcon_install_space_imports(colcon_ws):
    mode, ws, in_ws = colcon_ws
    proc = in_ws(f'cd / && python - <<"EOF"\n{PROBE}\nEOF')
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    if mode == 'copy':
        assert info['file'].startswith(str(ws / 'install' / PKG)), info
        assert info['share'] == str(ws / 'install' / PKG / 'share' / PKG)
    else:
        # the symlinked build directory, i.e. the live source
        assert info['file'].startswith(str(ws / 'build' / PKG / 'src')), info
        assert Path(info['file']).resolve() == REPO / 'src' / PKG / '__init__.py'
        if (REPO / 'config').is_dir():
            assert Path(info['share']) == REPO
        else:  # source tree not recognised without config/: the ament index
            assert info['share'] == str(ws / 'install' / PKG / 'share' / PKG)
    # the `pkm` command and one executable per ROS 2 node (issue 4)
    nodes = ('trajectory_generator', 'inverse_kinematics', 'computed_force', 'joint_controller', 'hardware')
    assert info['entry_points'] == sorted(['pkm = pkm_control.cli:main']
                                          + [f'{n} = pkm_control.nodes.executable:{n}' for n in nodes])
    # the hardware kinds registered in the install's metadata (entry-point group pkm_control.hardware)
    assert info['hardware'] == ['canopen', 'mujoco', 'ros2_control', 'sim', 'topics']
    assert not info['rclpy_loaded']


@pytest.mark.packaging
def test_colcon_installed_pkm_runs(colcon_ws):
    mode, ws, in_ws = colcon_ws
    proc = in_ws(f'cd / && {ws}/install/{PKG}/lib/{PKG}/pkm --help')
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r'usage', proc.stdout, re.I)
