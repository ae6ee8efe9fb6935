"""Where kbtool's shipped data lives: in a checkout, the top-level `specs/`; in a wheel, `kbtool/_specs/`.

setup.py maps the top-level `specs/` folder into the wheel as `kbtool/_specs`, so an installed kbtool
finds its spec from any directory; a checkout (editable install) reads the files in place.
"""

import os

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
