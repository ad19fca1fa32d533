"""Count the package-internal imports made inside function bodies (deferred imports).

    python3 bench/deferred_imports.py src [-v]

One count per import statement whose target resolves into ``memgauge``; ``-v`` lists them
(file, line, target). Design 0046 records the figures.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def _target(file: Path, root: Path, node: ast.ImportFrom) -> str | None:
    if node.level == 0:
        return node.module
    package = list(file.relative_to(root).with_suffix("").parts)[:-1]
    base = package[:len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def deferred(file: Path, root: Path) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if in_function and isinstance(child, ast.ImportFrom):
                target = _target(file, root, child)
                if target and target.startswith("memgauge"):
                    found.append((child.lineno, target))
            elif in_function and isinstance(child, ast.Import):
                found.extend((child.lineno, a.name) for a in child.names
                             if a.name.startswith("memgauge"))
            visit(child, inside)

    visit(ast.parse(file.read_text(encoding="utf-8")), False)
    return found


def main(argv: list[str]) -> None:
    root = Path(argv[0])
    rows = [(str(f.relative_to(root)), line, target)
            for f in sorted((root / "memgauge").rglob("*.py"))
            for line, target in deferred(f, root)]
    if "-v" in argv:
        for row in rows:
            print(*row)
    print(f"deferred internal imports: {len(rows)} files: {len({r[0] for r in rows})}")


if __name__ == "__main__":
    main(sys.argv[1:])
