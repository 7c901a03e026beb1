"""Build the documentation site and check its links.

    python docs/build.py [--out DIR]      # mkdocs build --strict into DIR (default: site/), then linkcheck
    python docs/build.py --requirements   # the `docs` extra of setup.py, one requirement a line

A warning of MkDocs or mkdocstrings fails the build (strict mode); a broken
internal link or anchor in the HTML fails the check (docs/linkcheck.py).
"""

from __future__ import annotations

import argparse
import ast
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import linkcheck  # noqa: E402  (docs/linkcheck.py, beside this file)


def docs_requirements() -> list[str]:
    """extras_require["docs"] as setup.py writes it (read, not run: setup.py
    builds C extensions when run)."""
    tree = ast.parse(open(os.path.join(ROOT, "setup.py"), encoding="utf-8").read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and key.value == "docs":
                    return [ast.literal_eval(v) for v in value.elts]  # type: ignore[attr-defined]
    raise SystemExit("docs/build.py: setup.py has no 'docs' extra")


def build(out: str) -> int:
    """mkdocs build --strict into out; its exit status."""
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    cmd = [sys.executable, "-m", "mkdocs", "build", "--strict", "--clean", "-f", os.path.join(ROOT, "mkdocs.yml"),
           "-d", os.path.abspath(out)]
    print("docs/build.py:", " ".join(cmd), flush=True)
    return subprocess.run(cmd, cwd=ROOT, env=env).returncode


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "site"))
    ap.add_argument("--requirements", action="store_true")
    args = ap.parse_args(argv)
    if args.requirements:
        print("\n".join(docs_requirements()))
        return 0
    code = build(args.out)
    if code:
        print(f"docs/build.py: mkdocs build failed (exit {code})", file=sys.stderr)
        return code
    return linkcheck.main([args.out])


if __name__ == "__main__":
    sys.exit(main())
