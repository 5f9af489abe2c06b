"""Progress bars that suit both a terminal and a log file.

On a terminal the bar refreshes ten times a second; when stderr is not a terminal (CI, a log file,
a pipe) it writes a line at most every LOG_INTERVAL seconds, so a long run leaves a few lines in the
log instead of thousands of carriage-return updates.
"""

from __future__ import annotations

import sys

LOG_INTERVAL = 30.0     # s between lines when stderr is not a terminal


def progress_bar(iterable=None, **kwargs):
    """tqdm on stderr with a refresh interval chosen for the output (module docstring)."""
    from tqdm import tqdm

    tty = sys.stderr.isatty()
    kwargs.setdefault("file", sys.stderr)
    kwargs.setdefault("mininterval", 0.1 if tty else LOG_INTERVAL)
    kwargs.setdefault("maxinterval", 10.0 if tty else LOG_INTERVAL)
    if not tty:
        kwargs.setdefault("ncols", 100)
    return tqdm(iterable, **kwargs)
