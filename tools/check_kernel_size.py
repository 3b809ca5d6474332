"""Check the kernel's size limits (issue #14): no class in scheduler_sim/kernel over MAX_CLASS_LINES lines.

Usage: ``python tools/check_kernel_size.py`` prints every kernel class with its length and exits 1 if one is over
the limit. The function complexity limit (cyclomatic complexity <= 15) is ruff's C901, configured for the kernel in
pyproject.toml. Run by tests/unit/test_kernel_size.py.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

#: Longest class allowed in the kernel, docstrings and comments included [lines].
MAX_CLASS_LINES = 300
KERNEL = Path(__file__).resolve().parents[1] / "scheduler_sim" / "kernel"


def class_sizes(root: Path = KERNEL) -> list[tuple[str, int]]:
    """``("file.py:Class", lines)`` for every class defined in ``root``'s modules, longest first."""
    out = []
    for path in sorted(root.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                out.append((f"{path.name}:{node.name}", node.end_lineno - node.lineno + 1))
    return sorted(out, key=lambda x: -x[1])


def main() -> int:
    """Print the sizes; 1 if a class is over :data:`MAX_CLASS_LINES`."""
    sizes = class_sizes()
    for name, n in sizes:
        print(f"{n:5d}  {name}{'  <-- over ' + str(MAX_CLASS_LINES) if n > MAX_CLASS_LINES else ''}")
    return 1 if any(n > MAX_CLASS_LINES for _, n in sizes) else 0


if __name__ == "__main__":
    sys.exit(main())
