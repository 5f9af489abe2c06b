"""Draws docs/architecture.png (`make architecture`): the layers of src/pkm_control and the imports between them.

The layers, bottom to top, are the table in docs/architecture.md ("Layers"); the arrows are the code's imports
between the top-level packages and modules (every ``import`` and ``from ... import`` of every module, lazy ones in
functions too), read from the syntax trees. An import that a chain of drawn arrows already implies is left out
(the transitive reduction), so the picture shows the direct dependencies; an arrow that points up the layers would
be drawn red. Packages that import rclpy are shaded as the ROS side.

    python docs/architecture.py [--output docs/architecture.png]
"""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PKG = "pkm_control"
SRC = REPO / "src"
#: a row of the layer table: | layer | `name.py` or `name/` | what it is |
LAYER_ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*`([\w]+)(?:\.py|/)`\s*\|")


def documented_layers(doc: Path = REPO / "docs" / "architecture.md") -> dict[str, int]:
    """name -> layer (0 = bottom) from the layer table of docs/architecture.md."""
    return {m.group(2): int(m.group(1)) for line in doc.read_text().splitlines() if (m := LAYER_ROW.match(line))}


def tree_names() -> set[str]:
    """The top-level packages and modules of src/pkm_control (a package ``x/`` or a module ``x.py``)."""
    root = SRC / PKG
    return ({d.name for d in root.iterdir() if (d / "__init__.py").exists()}
            | {p.stem for p in root.glob("*.py") if p.stem != "__init__"})


def _top(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == PKG else None


def imports() -> tuple[set[tuple[str, str]], set[str]]:
    """(importer, imported) pairs of top-level names, and the names whose modules import rclpy."""
    names, edges, ros = tree_names(), set(), set()
    for path in sorted((SRC / PKG).rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        module = ".".join(parts[:-1] if is_pkg else parts)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = module.split(".") if is_pkg else module.split(".")[:-1]
                    target = ".".join(base[:len(base) - node.level + 1] + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                # `from pkm_control import cli`: the imported name is the module
                targets = [f"{target}.{a.name}" for a in node.names] if target == PKG else [target]
            else:
                continue
            source = _top(module)
            for target in targets:
                if target.split(".")[0] == "rclpy" and source:
                    ros.add(source)
                name = _top(target)
                if source and name in names and name != source:
                    edges.add((source, name))
    return edges, ros


def reduced(edges: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """The edges no longer path of edges implies (on an acyclic graph: its transitive reduction)."""
    after = {}
    for a, b in edges:
        after.setdefault(a, set()).add(b)

    def reach(start, skip):
        seen, todo = set(), [n for n in after.get(start, ()) if (start, n) != skip]
        while todo:
            n = todo.pop()
            if n not in seen:
                seen.add(n)
                todo += after.get(n, ())
        return seen

    return {(a, b) for a, b in edges if b not in reach(a, (a, b))}


def draw(output: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    layer = documented_layers()
    edges, ros = imports()
    shown = reduced(edges)
    rows = {}
    for name, rank in sorted(layer.items(), key=lambda item: (item[1], item[0])):
        rows.setdefault(rank, []).append(name)
    width, height, gap = 2.0, 0.5, 0.35
    place = {}
    for rank, names in rows.items():
        for i, name in enumerate(names):
            place[name] = ((i - (len(names) - 1) / 2) * (width + 0.3), rank * (height + gap))
    fig, ax = plt.subplots(figsize=(7.5, 0.5 + 0.62 * len(rows)))
    for name, (x, y) in place.items():
        label = f"{name}.py" if (SRC / PKG / f"{name}.py").exists() else f"{name}/"
        ax.add_patch(FancyBboxPatch((x - width / 2, y - height / 2), width, height, boxstyle="round,pad=0.02",
                                    facecolor="#cfe3f7" if name in ros else "#f2f2f2", edgecolor="#333333"))
        ax.text(x, y, label, ha="center", va="center", fontsize=10, family="monospace")
    straight = [e for e in shown if abs(layer[e[0]] - layer[e[1]]) <= 1]
    # an arrow past the layers between runs in a lane of its own beside the column, the shorter ones inside
    lanes = sorted((e for e in shown if e not in straight), key=lambda e: (abs(layer[e[0]] - layer[e[1]]), e))
    for a, b in straight:
        (xa, ya), (xb, yb) = place[a], place[b]
        down = ya > yb
        edge = height / 2 if down else -height / 2
        start, end = (xa, ya - edge), (xb, yb + edge)
        ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=9, linewidth=0.9, shrinkA=1,
                                     shrinkB=1, color="#555555" if down else "#c62828"))
    for k, (a, b) in enumerate(lanes):
        (xa, ya), (xb, yb) = place[a], place[b]
        sign = (1 if k % 2 else -1) if xb == xa else (1 if xb > xa else -1)   # toward a target off the column
        lane = sign * (width / 2 + 0.25 + 0.25 * (k // 2))
        color = "#555555" if ya > yb else "#c62828"
        dy = 0.06 * (k // 2) * (1 if ya > yb else -1)
        path = [(xa + sign * width / 2, ya - dy), (lane, ya - dy)]
        if abs(lane - xb) < width / 2:           # the target lies under the lane: into its top
            path.append((lane, yb + height / 2 if ya > yb else yb - height / 2))
        else:
            path += [(lane, yb + dy), (xb + sign * width / 2, yb + dy)]
        ax.plot(*zip(*path[:-1]), color=color, linewidth=0.9)
        ax.add_patch(FancyArrowPatch(path[-2], path[-1], arrowstyle="-|>", mutation_scale=9, linewidth=0.9,
                                     shrinkA=0, shrinkB=1, color=color))
    xs = [x for x, _ in place.values()]
    ax.set_xlim(min(xs) - width / 2 - 0.4 - 0.25 * (len(lanes) + 1) / 2,
                max(xs) + width / 2 + 0.4 + 0.25 * (len(lanes) + 1) / 2)
    ax.set_ylim(-height - 0.3, max(y for _, y in place.values()) + height + 0.3)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"src/pkm_control: layers bottom to top, arrows = imports ({len(shown)} drawn, "
                 f"{len(edges) - len(shown)} implied by a chain left out)\nshaded: imports rclpy", fontsize=9)
    fig.tight_layout()
    fig.savefig(output, dpi=110)
    plt.close(fig)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=REPO / "docs" / "architecture.png")
    args = parser.parse_args(argv)
    draw(args.output)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
