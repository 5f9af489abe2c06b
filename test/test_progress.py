"""Progress bars write a few lines, not thousands of refreshes, when stderr is not a terminal (a log file)."""

import subprocess
import sys


def test_a_long_loop_leaves_a_few_lines_in_a_log(tmp_path):
    log = tmp_path / "log.txt"
    code = ("import time\nfrom pkm_control.progress import progress_bar\n"
            "for _ in progress_bar(range(50000), desc='work'):\n    time.sleep(0)\n")
    with open(log, "w") as f:
        subprocess.run([sys.executable, "-c", code], stderr=f, check=True, timeout=300)
    text = log.read_text()
    lines = text.replace("\r", "\n").splitlines()
    assert "50000/50000" in text and len(lines) <= 5 and len(text) < 2000, (len(lines), len(text))
