"""The project's Fast DDS profile (config/fastdds.xml) in the environment of its own processes, where the user has not
chosen one. ROS-free (no rclpy).

Why (docs/graph.md "DDS discovery"): a participant that discovers a new one answers it with one announcement (DATA(p))
of its own; when the new participant drops that answer (seen with Fast DDS 3.2.3: received while it was still
starting), the two meet only at the older participant's next periodic announcement, up to Fast DDS's default period
of 3 s later: a node's start to its first message then took ~3.6 s instead of ~1.5 s (docs/benchmarks.md). The
profile announces every 0.5 s: a lost answer costs at most that.

The user's choice wins: a profile of their own (FASTDDS_DEFAULT_PROFILES_FILE, or a DEFAULT_FASTDDS_PROFILES.xml in
the working directory, which Fast DDS loads when the variable is not set), SKIP_DEFAULT_XML (Fast DDS's defaults,
no XML), or another RMW than Fast DDS (RMW_IMPLEMENTATION).
"""

from __future__ import annotations

import os
from pathlib import Path

PROFILE_VARIABLE = "FASTDDS_DEFAULT_PROFILES_FILE"
#: the RMW implementations that run Fast DDS (ROS 2's default when RMW_IMPLEMENTATION is not set)
FASTDDS_RMWS = ("", "rmw_fastrtps_cpp", "rmw_fastrtps_dynamic_cpp")


def dds_profile(environ, cwd: str | os.PathLike = ".") -> Path | None:
    """The Fast DDS profile a project process started with ``environ`` (in ``cwd``) takes: config/fastdds.xml, or
    None where the user has chosen (module docstring)."""
    from ..description.paths import share_dir

    if environ.get(PROFILE_VARIABLE) or environ.get("SKIP_DEFAULT_XML") \
            or environ.get("RMW_IMPLEMENTATION", "").strip() not in FASTDDS_RMWS \
            or (Path(cwd) / "DEFAULT_FASTDDS_PROFILES.xml").is_file():
        return None
    return share_dir() / "config" / "fastdds.xml"


def use_dds_profile(environ=os.environ) -> dict:
    """Set the project's Fast DDS profile in ``environ`` (os.environ: this process's participants, which read it when
    the process creates its first one, and the processes it starts) unless the user has chosen (``dds_profile``).
    Returns ``environ``."""
    profile = dds_profile(environ)
    if profile is not None:
        environ[PROFILE_VARIABLE] = str(profile)
    return environ
