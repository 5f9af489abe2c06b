"""The shipped robots: config/<robot>.yaml + urdf/<robot>.urdf.xacro -> ClosedLoopModel.

A robot config may hold ``variants: {name: {key: value, ...}}``; a variant
replaces those top-level keys (a shallow merge, done the same way by the xacro
file, so the URDF and the Python side always see the same parameters).
"""

from __future__ import annotations

import functools

import yaml

from ..errors import InvalidInputError, InvalidModelError, excerpt
from .paths import config_path, share_dir, urdf_xacro_path
from .loader import ClosedLoopModel, load_model


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


def _raw_config(robot: str) -> dict:
    names = robot_names()
    if robot not in names:      # before any file access: a name is not a path (nor 5000 characters of one)
        raise InvalidModelError(f"unknown robot '{excerpt(robot)}' (robots: {', '.join(names)})")
    with open(config_path(robot)) as f:
        return yaml.safe_load(f)


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
    """Process urdf/<robot>.urdf.xacro with the robot's config and variant (cached)."""
    import xacro

    variant = robot_config(robot, variant)["variant"]
    mappings = {"config": str(config_path(robot)), "variant": variant}
    try:
        doc = xacro.process_file(str(urdf_xacro_path(robot)), mappings=mappings)
    except Exception as exc:  # xacro raises XacroException and plain errors from expressions
        raise InvalidModelError(f"xacro failed on {urdf_xacro_path(robot)} (variant '{variant}'): {exc}") from exc
    return doc.toxml()


@cached_per_robot
def load_robot(robot: str, variant: str | None = None) -> ClosedLoopModel:
    """Load a shipped robot. The result is immutable and cached."""
    cfg = robot_config(robot, variant)
    return load_model(robot_urdf(robot, cfg["variant"]), cfg, name=robot, variant=cfg["variant"])
