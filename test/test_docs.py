"""The documentation against the code: the layer map, the launch arguments, the controllers, the `pkm` commands,
the generated reference pages and every relative link of README.md and docs/*.md."""

import ast
import importlib.util
import re
from pathlib import Path

import pytest
import yaml

from test_packaging import LAYERS

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
PAGES = [REPO / "README.md", *sorted(DOCS.glob("*.md"))]


def _script(name):
    """A script of docs/ as a module (docs/ is not a package)."""
    spec = importlib.util.spec_from_file_location(f"docs_{name}", DOCS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


reference = _script("reference")
architecture = _script("architecture")


def test_the_layer_table_names_every_package_of_the_tree_and_nothing_else():
    documented, tree = set(architecture.documented_layers()), architecture.tree_names()
    assert documented == tree, (f"in src/pkm_control but not in docs/architecture.md's layer table: "
                                f"{sorted(tree - documented)}; in the table but not in the tree: "
                                f"{sorted(documented - tree)}")


def test_the_layer_table_has_the_layers_the_packaging_test_enforces():
    layers = architecture.documented_layers()
    assert [tuple(sorted(n for n in layers if layers[n] == rank)) for rank in sorted(set(layers.values()))] == \
        [tuple(sorted(layer)) for layer in LAYERS]


def test_the_map_draws_only_names_of_the_tree():
    edges, ros = architecture.imports()
    names = architecture.tree_names()
    assert edges and {n for edge in edges for n in edge} <= names and ros <= names
    # the reduction keeps what it cannot derive: every import is a drawn arrow or a chain of them
    shown = architecture.reduced(edges)
    after = {}
    for a, b in shown:
        after.setdefault(a, set()).add(b)

    def reach(start):
        seen, todo = set(), list(after.get(start, ()))
        while todo:
            n = todo.pop()
            if n not in seen:
                seen.add(n)
                todo += after.get(n, ())
        return seen

    assert all(b in reach(a) for a, b in edges)


def _launch_docstring():
    return ast.get_docstring(ast.parse((REPO / "launch" / "bringup.launch.py").read_text()))


def test_every_launch_argument_is_documented():
    arguments = reference.launch_arguments()
    doc, parameters = _launch_docstring(), (DOCS / "parameters.md").read_text()
    assert {"stand_in", "topic_convention", "true_parameters_file"} <= arguments.keys()
    missing_doc = [a for a in arguments if not re.search(rf"^  {a}\s", doc, re.MULTILINE)]
    missing_page = [a for a in arguments if f"| `{a}` |" not in parameters]
    assert not missing_doc and not missing_page, (missing_doc, missing_page)


def test_every_controller_is_documented():
    """The controllers load_settings reads (the `controllers:` mapping of config/controllers.yaml)."""
    controllers = yaml.safe_load((REPO / "config" / "controllers.yaml").read_text())["controllers"]
    doc, parameters = _launch_docstring(), (DOCS / "parameters.md").read_text()
    assert len(controllers) > 5
    missing_doc = [c for c in controllers if not re.search(rf"\b{c}\b", doc)]
    missing_page = [c for c in controllers if f"| `{c}` |" not in parameters]
    assert not missing_doc and not missing_page, (missing_doc, missing_page)


def test_every_node_parameter_is_documented():
    from pkm_control.control.settings import COMMON_KEYS, NODE_KEYS

    parameters = (DOCS / "parameters.md").read_text()
    keys = set(COMMON_KEYS) | {k for used in NODE_KEYS.values() for k in used}
    assert not [k for k in sorted(keys) if f"| `{k}` |" not in parameters]


def test_every_pkm_command_is_in_the_commands_page():
    helps = reference.command_helps()
    names = {" ".join(argv) for argv, _ in helps[1:]}
    assert {"demo", "bringup", "param get", "record"} <= names
    page = (DOCS / "commands.md").read_text()
    assert not [n for n in sorted(names) if f"\n## pkm {n}\n" not in page]


@pytest.mark.parametrize("page", sorted(reference.PAGES))
def test_the_generated_pages_are_up_to_date(page):
    assert (DOCS / page).read_text() == reference.PAGES[page](), f"docs/{page} is stale: run `make docs`"


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but - and _ dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set:
    found, counts, fenced = set(), {}, False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"^#{1,6}\s+(.*)$", line)):
            base = slug(m.group(1))
            n = counts.get(base, 0)
            counts[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
    return found


def test_slug_is_githubs():
    assert slug("Identified parameters: `make demo-identified` (`pkm demo --identified`)") == \
        "identified-parameters-make-demo-identified-pkm-demo---identified"
    assert slug("ros2_control bridge") == "ros2_control-bridge"


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(REPO).as_posix() for p in PAGES])
def test_every_relative_link_points_to_an_existing_file_and_heading(page):
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.MULTILINE | re.DOTALL)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no file {file}")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: no heading #{anchor} in {file.name}")
    assert not broken, "\n".join(broken)
