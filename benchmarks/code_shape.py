"""The code-shape measures of issue #29, rerunnable from the tree with ``ast``: modules at the
top level of a package, module line counts over a limit, and function bodies over a limit.

    python benchmarks/code_shape.py [PACKAGE] [--module-limit 800] [--function-limit 60]
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "crowdhide"


def _long_functions(path: Path, limit: int) -> list[tuple[str, int, int]]:
    """(name@line, body lines, body lines without the docstring) of every function whose
    body spans more than ``limit`` lines."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            end = body[-1].end_lineno or body[-1].lineno
            lines = end - body[0].lineno + 1
            if lines > limit:
                # also without the docstring: the statements a reader has to follow
                doc = isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                code = end - body[1].lineno + 1 if doc and len(body) > 1 else lines
                found.append((f"{node.name}@{node.lineno}", lines, code))
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
        for name, count, code in _long_functions(path, args.function_limit):
            where = f"{path.relative_to(SRC)}:{name}"
            limit = args.function_limit
            print(f"  function over {limit}: {where} {count} ({code} without docstring)")


if __name__ == "__main__":
    main()
