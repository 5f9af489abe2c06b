"""Entry-point registries (ROS-free): what an installed package adds to pkm_control by name.

A group of entry points (setup.py ``entry_points``, a wheel's ``entry_points.txt``) maps names to objects, as
pluginlib maps a ros2_control ``<plugin>`` name to a class. pkm_control registers its own hardware kinds in the
group HARDWARE_GROUP; another installed package adds one by declaring an entry point in the same group
(docs/hardware.md, "Add your own hardware interface"). The names are read from the installed metadata without
importing anything; ``load`` imports the one asked for.
"""

from __future__ import annotations

import functools
from importlib import metadata

from .errors import InvalidInputError

#: name -> a HardwarePlugin (pkm_control.hardware.plugin): the kinds of the ``hardware`` setting
HARDWARE_GROUP = "pkm_control.hardware"


@functools.lru_cache(maxsize=None)
def _scan(group: str) -> tuple:
    """(name, EntryPoint) of ``group`` over the installed distributions, read once per process: only the
    distributions whose entry_points.txt names the group are parsed (importlib.metadata.entry_points parses every
    one: measured 180 ms over this venv's 226 distributions, this ~90 ms). A distribution found again further down
    sys.path (an older install of the same package) is skipped, and the first one to declare a name keeps it."""
    out, seen = {}, set()
    for dist in metadata.distributions():
        text = dist.read_text("entry_points.txt")
        if not text or f"[{group}]" not in text:
            continue
        package = (dist.metadata["Name"] or "").lower().replace("-", "_")
        if package in seen:
            continue
        seen.add(package)
        for ep in dist.entry_points.select(group=group):
            out.setdefault(ep.name, ep)
    return tuple(out.items())


def entry_points(group: str) -> dict:
    """name -> EntryPoint of ``group`` over the installed distributions (read once per process; ``rescan``)."""
    return dict(_scan(group))


def rescan() -> None:
    """Read the installed entry points again (a distribution installed, or put on sys.path, since)."""
    _scan.cache_clear()


def names(group: str) -> tuple:
    """The registered names of ``group``, sorted."""
    return tuple(sorted(entry_points(group)))


def load(group: str, name: str, what: str):
    """The object registered as ``name`` in ``group`` (imported now). An unknown name is an InvalidInputError that
    lists the registered ones; none registered at all means pkm_control's installed metadata predates the group."""
    found = entry_points(group)
    if name not in found:
        if not found:
            raise InvalidInputError(f"{what} {name!r}: nothing is registered in the entry-point group {group!r}: "
                                    "pkm_control's installed metadata is older than its sources (reinstall it: "
                                    "`make env`, or `pip install -e .`)")
        raise InvalidInputError(f"{what} {name!r} is not registered; registered: {', '.join(sorted(found))} "
                                f"(entry-point group {group!r})")
    try:
        return found[name].load()
    except (ImportError, AttributeError) as exc:
        raise InvalidInputError(f"{what} {name!r} ({found[name].value}) cannot be loaded: "
                                f"{type(exc).__name__}: {exc}") from exc
