"""Check the size and structure limits of the product packages (issues #14, #27); run by tests/unit/test_kernel_size.py.

Usage: ``python tools/check_kernel_size.py`` prints every class over its limit and every import circle, and exits 1
if there is one.

- Classes: no class in scheduler_sim/kernel over :data:`MAX_CLASS_LINES` lines, none elsewhere in the product
  packages (:data:`PACKAGES`) over :data:`MAX_PACKAGE_CLASS_LINES`, but for the classes named in
  :data:`CLASS_EXEMPTIONS`, each with the issue that splits it.
- Import circles: no circle between project files, counting every import a module makes outside a function,
  ``if TYPE_CHECKING:`` imports included (an annotation-only import still ties the files together); imports inside
  functions are deferred by design and not counted. :data:`KNOWN_CIRCLES` lists the circles an open issue removes.
- Function complexity (cyclomatic complexity <= 20 in every product package, <= 15 in the kernel) is ruff's C901,
  configured in pyproject.toml and scheduler_sim/kernel/ruff.toml with no per-file exemption.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The product packages (pyproject ``[tool.setuptools.packages.find]``).
PACKAGES = ("scheduler_sim", "power", "cooling_fmu", "dataloaders", "jobs", "experiments")
#: Longest class allowed in the kernel, docstrings and comments included [lines].
MAX_CLASS_LINES = 300
#: Longest class allowed in the other product packages [lines].
MAX_PACKAGE_CLASS_LINES = 400
KERNEL = ROOT / "scheduler_sim" / "kernel"
#: Classes over the limit that an open issue splits ("path:Class" -> why it is exempt, until when).
CLASS_EXEMPTIONS: dict[str, str] = {}  # none: CoolingPlant is split (398 lines), ServingEngine too (198)
#: Import circles that exist today and an open issue removes (each as the sorted tuple of its modules); a new
#: circle, or a listed one that has grown, fails the check. Shrink this list, never grow it.
KNOWN_CIRCLES: tuple[tuple[str, ...], ...] = ()


def class_sizes(root: Path = KERNEL, base: Path | None = None) -> list[tuple[str, int]]:
    """``("file.py:Class", lines)`` for every class defined in ``root``'s modules, longest first.

    Parameters
    ----------
    root : Path
        A folder; its ``*.py`` files are read (not its subfolders unless ``base`` is given).
    base : Path or None
        With a base, every ``*.py`` below ``root`` is read and named by its path relative to ``base``.

    Returns
    -------
    list of (str, int)
        Class name with its file, and its length in lines (``class`` line to last line).
    """
    out = []
    paths = sorted(root.rglob("*.py")) if base is not None else sorted(root.glob("*.py"))
    for path in paths:
        if ".venv" in path.parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        name = path.relative_to(base).as_posix() if base is not None else path.name
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                out.append((f"{name}:{node.name}", node.end_lineno - node.lineno + 1))
    return sorted(out, key=lambda x: -x[1])


def classes_over_limit(root: Path = ROOT) -> list[tuple[str, int, int]]:
    """``(path:Class, lines, limit)`` of every product-package class over its limit, exemptions left out.

    Parameters
    ----------
    root : Path
        The repository root.

    Returns
    -------
    list of (str, int, int)
        The classes over the limit (300 lines in scheduler_sim/kernel, 400 elsewhere).
    """
    over = []
    for pkg in PACKAGES:
        for name, n in class_sizes(root / pkg, base=root):
            limit = MAX_CLASS_LINES if name.startswith("scheduler_sim/kernel/") else MAX_PACKAGE_CLASS_LINES
            if n > limit and name not in CLASS_EXEMPTIONS:
                over.append((name, n, limit))
    return over


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _top_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """The imports a module makes outside functions (in ``if``/``try`` blocks and classes included)."""
    out: list[ast.Import | ast.ImportFrom] = []
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append(node)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))
    return out


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the project modules it imports at module level (``if TYPE_CHECKING:`` included).

    ``from a.b import c`` names the module ``a.b.c`` when it is one, else ``a.b``; relative imports are resolved
    against the importing module's package.

    Parameters
    ----------
    root : Path
        The repository root.

    Returns
    -------
    dict of str -> set of str
        Edges between the dotted names of the product packages' modules.
    """
    files = {}
    for pkg in PACKAGES:
        for path in (root / pkg).rglob("*.py"):
            files[_module_name(path, root)] = path
    graph: dict[str, set[str]] = {m: set() for m in files}
    for mod, path in files.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in _top_level_imports(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                if node.level:
                    base_parts = package.split(".")
                    base_parts = base_parts[: len(base_parts) - node.level + 1]
                    base = ".".join(base_parts + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names]
            for t in targets:
                while t and t not in files:  # `import a.b.c` of a name inside a module: its module
                    t = t.rpartition(".")[0]
                if t and t != mod:
                    graph[mod].add(t)
    return graph


def import_circles(graph: dict[str, set[str]] | None = None) -> list[tuple[str, ...]]:
    """Every strongly connected set of two or more modules of the import graph (Tarjan), each sorted.

    Parameters
    ----------
    graph : dict of str -> set of str, optional
        As :func:`import_graph` gives (the default).

    Returns
    -------
    list of tuple of str
        The circles, sorted.
    """
    graph = import_graph() if graph is None else graph
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[tuple[str, ...]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        x = stack.pop()
                        on_stack.discard(x)
                        comp.append(x)
                        if x == v:
                            break
                    if len(comp) > 1:
                        out.append(tuple(sorted(comp)))
            elif w not in index:
                index[w] = low[w] = counter
                counter += 1
                stack.append(w)
                on_stack.add(w)
                work.append((w, iter(sorted(graph.get(w, ())))))
            elif w in on_stack:
                low[v] = min(low[v], index[w])
    return sorted(out)


#: Each kernel service module and the protocol of scheduler_sim/kernel/platform.py that declares what it may use of
#: the platform it serves (issue #27 item 2).
SERVICE_PROTOCOLS = {"events": "EventPlatform", "lifecycle": "LifecyclePlatform", "window": "WindowPlatform",
                     "results": "ResultPlatform", "lookahead": "ForkPlatform"}
#: How the services name the platform: a parameter or local of one of these names, or ``self.<one of these>``.
PLATFORM_NAMES = ("sim", "fork", "platform", "f")
PLATFORM_ATTRS = ("sim", "_fork", "_platform")


def protocol_members(path: Path = KERNEL / "platform.py") -> dict[str, set[str]]:
    """Members (annotated attributes and methods) of every protocol class in ``path``.

    Parameters
    ----------
    path : Path
        The platform protocols' module.

    Returns
    -------
    dict of str to set of str
        Class name -> its member names.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            out[node.name] = {s.target.id for s in node.body if isinstance(s, ast.AnnAssign)} | \
                             {s.name for s in node.body if isinstance(s, ast.FunctionDef)}
    return out


def platform_reaches(path: Path) -> set[str]:
    """Members a service module uses of the platform (``sim.x``, ``self.sim.x``, ``fork.x``, ``self._fork.x`` ...).

    Parameters
    ----------
    path : Path
        A kernel service module.

    Returns
    -------
    set of str
        The member names.
    """
    def is_platform(v: ast.expr) -> bool:
        if isinstance(v, ast.Name):
            return v.id in PLATFORM_NAMES
        return (isinstance(v, ast.Attribute) and v.attr in PLATFORM_ATTRS and isinstance(v.value, ast.Name)
                and v.value.id == "self")

    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and is_platform(n.value)}


def undeclared_reaches() -> list[tuple[str, str]]:
    """``(service module, member)`` for every platform member a service uses that its protocol does not declare.

    Returns
    -------
    list of (str, str)
    """
    members = protocol_members()
    out = []
    for mod, proto in SERVICE_PROTOCOLS.items():
        for m in sorted(platform_reaches(KERNEL / f"{mod}.py") - members[proto]):
            out.append((mod, m))
    return out


def main() -> int:
    """Print what is over a limit and every import circle; 1 if any is not allowed.

    Returns
    -------
    int
        0 when every limit holds, else 1.
    """
    bad = False
    for name, n, limit in classes_over_limit():
        print(f"{n:5d}  {name}  <-- over {limit}")
        bad = True
    for c in import_circles():
        known = c in KNOWN_CIRCLES
        print(f"import circle{' (known)' if known else ''}: {' -> '.join(c)}")
        bad |= not known
    for mod, member in undeclared_reaches():
        print(f"kernel/{mod}.py uses platform.{member}, not declared in kernel/platform.py:{SERVICE_PROTOCOLS[mod]}")
        bad = True
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
