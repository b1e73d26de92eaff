"""The code-shape measures of issue #29, rerunnable from the tree with ``ast``: modules at the
top level of a package, module line counts over a limit, and function bodies over a limit.

    python benchmarks/code_shape.py [PACKAGE] [--module-limit 800] [--function-limit 60]
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "crowdhide"


def _long_functions(path: Path, limit: int) -> list[tuple[str, int]]:
    """(qualified name, body lines) of every function whose body spans more than ``limit``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            lines = (body[-1].end_lineno or body[-1].lineno) - body[0].lineno + 1
            if lines > limit:
                found.append((node.name, lines))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", nargs="?", default="accounting")
    parser.add_argument("--module-limit", type=int, default=800)
    parser.add_argument("--function-limit", type=int, default=60)
    args = parser.parse_args()
    root = SRC / args.package
    modules = sorted(root.rglob("*.py"))
    top = sorted(p.name for p in root.glob("*.py"))
    lines = {p: len(p.read_text(encoding="utf-8").splitlines()) for p in modules}
    print(f"{args.package}: {len(modules)} modules, {sum(lines.values())} lines")
    print(f"top-level modules: {len(top)} ({', '.join(top)})")
    print(f"subpackages: {', '.join(sorted(p.parent.name for p in root.glob('*/__init__.py')))}")
    print(f"largest: {max(lines.values())} lines")
    for path, count in sorted(lines.items(), key=lambda kv: -kv[1]):
        if count > args.module_limit:
            print(f"  module over {args.module_limit}: {path.relative_to(SRC)} {count}")
    for path in modules:
        for name, count in _long_functions(path, args.function_limit):
            print(f"  function over {args.function_limit}: {path.relative_to(SRC)}:{name} {count}")


if __name__ == "__main__":
    main()
