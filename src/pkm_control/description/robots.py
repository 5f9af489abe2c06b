"""Robots: config/<robot>.yaml + urdf/<robot>.urdf.xacro -> ClosedLoopModel.

A robot is named by its id (a shipped robot, ``robot_names``) or by the path of its YAML (a robot of one's own,
anywhere: ``path/to/mybot.yaml``). The description beside a YAML at ``<dir>/<stem>.yaml`` is the first of
``<dir>/<stem>.urdf.xacro``, ``<dir>/<stem>.urdf`` and ``<dir>/../urdf/<stem>.urdf.xacro`` (the package's own
layout) that exists; xacro gets the YAML's path as its ``config`` argument, as for a shipped robot.

A robot config may hold ``variants: {name: {key: value, ...}}``; a variant
replaces those top-level keys (a shallow merge, done the same way by the xacro
file, so the URDF and the Python side always see the same parameters).
"""

from __future__ import annotations

import functools
from pathlib import Path

from ..errors import InvalidInputError, InvalidModelError, excerpt
from .paths import config_path, read_user_yaml, share_dir, urdf_xacro_path
from .loader import ClosedLoopModel, load_model
from .spec import parse_spec


def robot_names() -> list[str]:
    """Robot ids that have both a config and a xacro file."""
    root = share_dir()
    return sorted(p.stem for p in (root / "config").glob("*.yaml")
                  if (root / "urdf" / f"{p.stem}.urdf.xacro").exists())


def cached_per_robot(fn):
    """``functools.lru_cache`` for a function of (robot, variant) whose result is immutable. The arguments are
    checked before the cache hashes them: a list or a dict gets InvalidInputError naming it, not lru_cache's
    ``TypeError: unhashable type``."""
    cached = functools.lru_cache(maxsize=None)(fn)

    @functools.wraps(fn)
    def per_robot(robot: str, variant: str | None = None):
        if not isinstance(robot, str):
            raise InvalidInputError(f"robot must be a robot id (a string), got {type(robot).__name__} "
                                    f"{excerpt(robot)!r}")
        if variant is not None and not isinstance(variant, str):
            raise InvalidInputError(f"variant must be a variant name (a string) or None, got "
                                    f"{type(variant).__name__} {excerpt(variant)!r}")
        return cached(robot, variant)

    return per_robot


def is_robot_path(robot: str) -> bool:
    """A robot named by the path of its YAML (it ends in .yaml or .yml), not by a shipped robot's id."""
    return robot.endswith((".yaml", ".yml"))


def robot_files(robot: str) -> tuple[Path, Path]:
    """(config YAML, URDF or xacro) of a shipped robot id or of a robot's YAML path (module docstring); a missing
    file is an InvalidModelError naming what was looked for."""
    names = robot_names()
    if not is_robot_path(robot):
        if robot not in names:      # before any file access: a name is not a path (nor 5000 characters of one)
            raise InvalidModelError(f"unknown robot '{excerpt(robot)}' (robots: {', '.join(names)}, or the path "
                                    "of a robot's YAML: path/to/robot.yaml)")
        return config_path(robot), urdf_xacro_path(robot)
    cfg = Path(robot).expanduser().resolve()
    if not cfg.is_file():
        raise InvalidModelError(f"robot config '{excerpt(robot, 300)}': no such file (robots: {', '.join(names)}, "
                                "or the path of a robot's YAML)")
    beside = [cfg.with_name(cfg.stem + ".urdf.xacro"), cfg.with_name(cfg.stem + ".urdf"),
              cfg.parent.parent / "urdf" / (cfg.stem + ".urdf.xacro")]
    for description in beside:
        if description.is_file():
            return cfg, description
    raise InvalidModelError(f"robot config '{excerpt(robot, 300)}': no description beside it (looked for "
                            f"{', '.join(str(p) for p in beside)})")


def robot_rviz(robot: str) -> Path | None:
    """The RViz config of a robot: rviz/<robot>.rviz of a shipped robot, ``<dir>/<stem>.rviz`` beside a robot's YAML
    (None when there is none: RViz then starts with its default display)."""
    if not is_robot_path(robot):
        robot_files(robot)
        return share_dir() / "rviz" / f"{robot}.rviz"
    beside = robot_files(robot)[0].with_suffix(".rviz")
    return beside if beside.is_file() else None


def _raw_config(robot: str) -> dict:
    path = robot_files(robot)[0]
    cfg = read_user_yaml(path, "robot config", InvalidModelError)
    if not isinstance(cfg, dict):
        raise InvalidModelError(f"robot config {path}: expected a mapping of keys, got {type(cfg).__name__}")
    return cfg


def robot_variants(robot: str) -> list[str]:
    """Variant names of a robot, default variant first."""
    cfg = _raw_config(robot)
    default = cfg.get("default_variant", "")
    return [default] + [v for v in (cfg.get("variants") or {"": {}}) if v != default]


def robot_config(robot: str, variant: str | None = None) -> dict:
    """The robot's parameters with the variant applied (``None``: the default variant)."""
    cfg = _raw_config(robot)
    variants = cfg.get("variants") or {"": {}}
    variant = cfg.get("default_variant", "") if variant is None else variant
    if variant not in variants:
        raise InvalidModelError(f"robot '{robot}' has no variant '{excerpt(variant)}' (variants: {list(variants)})")
    merged = dict(cfg, **(variants[variant] or {}))
    merged["variant"] = variant
    return merged


@cached_per_robot
def robot_urdf(robot: str, variant: str | None = None) -> str:
    """The robot's URDF: its xacro processed with the robot's config and variant, or its plain URDF (cached)."""
    import xacro

    variant = robot_config(robot, variant)["variant"]
    config, description = robot_files(robot)
    if description.name.endswith(".urdf"):
        return description.read_text()
    mappings = {"config": str(config), "variant": variant}
    try:
        doc = xacro.process_file(str(description), mappings=mappings)
    except Exception as exc:  # xacro raises XacroException and plain errors from expressions
        raise InvalidModelError(f"xacro failed on {description} (variant '{variant}'): {exc}") from exc
    return doc.toxml()


@cached_per_robot
def load_robot(robot: str, variant: str | None = None) -> ClosedLoopModel:
    """Load a robot (a shipped id or a YAML path). The result is immutable and cached."""
    cfg = robot_config(robot, variant)
    spec = parse_spec(cfg, str(robot_files(robot)[0]))
    return load_model(robot_urdf(robot, cfg["variant"]), spec, name=robot, variant=cfg["variant"])
