#!/usr/bin/env python3
"""Re-resolve backend environments from their recipes and write their locks (kbtool/runners/locks/<env>.txt).

    python scripts/lock-env.py tensorflow1 mxnet      # or --all

Each env is built afresh in a scratch KBTOOL_HOME from the recipe's own package list (not the lock), and its
`pip freeze` becomes the lock: every transitive package pinned, so `kbtool env install` builds the same env next
year. Review the diff; the envs in your real KBTOOL_HOME are not touched. Exit 2 with one line on failure.
"""

import argparse
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from kbtool import files  # noqa: E402  (the checkout's kbtool, whatever is installed)
from kbtool.errors import KbtoolError  # noqa: E402
from kbtool.runners import envs  # noqa: E402
from kbtool.runners.registry import RECIPES  # noqa: E402

HEADER = "# every package of the {} env, pinned: kbtool env install installs exactly these (scripts/lock-env.py rewrites it)\n"


def lock_text(recipe, frozen):
    lines = sorted((recipe.freeze_aliases.get(line, line) for line in frozen), key=str.lower)
    return HEADER.format(recipe.env_owner) + "".join(line + "\n" for line in lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*")
    parser.add_argument("--all", action="store_true")
    args = parser.parse_args(argv)
    owners = {}
    for name in list(RECIPES) if args.all else args.names:
        if name not in RECIPES:
            print("lock-env: unknown environment {} ({})".format(name, ", ".join(RECIPES)), file=sys.stderr)
            return 2
        owners.setdefault(RECIPES[name].env_owner, RECIPES[RECIPES[name].env_owner])
    if not owners:
        parser.error("name one or more environments, or --all")
    with tempfile.TemporaryDirectory(prefix="kbtool-lock-") as home:
        os.environ["KBTOOL_HOME"] = home
        for recipe in owners.values():
            try:
                record = envs.install(recipe, log=lambda line: print("   " + line, file=sys.stderr), locked=False)
            except KbtoolError as exc:
                print(f"lock-env: {exc}", file=sys.stderr)
                return 2
            files.write_atomic(envs.lock_path(recipe), lock_text(recipe, record["installed"]))
            print("{}: {} packages locked in {}".format(recipe.name, len(record["installed"]), envs.lock_path(recipe)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
