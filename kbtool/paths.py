"""Where kbtool's shipped data lives: in a checkout, the top-level `specs/`; in a wheel, `kbtool/_specs/`.

setup.py maps the top-level `specs/` folder into the wheel as `kbtool/_specs`, so an installed kbtool
finds its spec from any directory; a checkout (editable install) reads the files in place.
"""

import os
from typing import Optional

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
CHECKOUT_ROOT = os.path.dirname(PACKAGE_DIR)


def specs_dir() -> str:
    packaged = os.path.join(PACKAGE_DIR, "_specs")
    if os.path.isfile(os.path.join(packaged, "ops.yaml")):
        return packaged
    return os.path.join(CHECKOUT_ROOT, "specs")


def spec_file() -> str:
    return os.path.join(specs_dir(), "ops.yaml")


def known_differences_file() -> str:
    return os.path.join(specs_dir(), "known_differences.yaml")


def known_models_file() -> str:
    return os.path.join(specs_dir(), "known_models.yaml")


def shown(path: str, cwd: Optional[str] = None) -> str:
    """`path` as a command or a report shows it: relative to `cwd` (default: the current directory) when inside it,
    else absolute. A report or a repro then names no machine's home or checkout, and runs from where it was made."""
    full = os.path.abspath(os.path.expanduser(path))
    here = os.path.abspath(cwd or os.getcwd())
    if full == here or full.startswith(here.rstrip(os.sep) + os.sep):
        relative = os.path.relpath(full, here)
        return os.path.join(os.curdir, relative) if relative.startswith("-") else relative  # not read as a flag
    return full
