"""NumPy backend: kbtool's own reference, run through the same worker path as the real backends."""

import sys

from kbtool.paths import CHECKOUT_ROOT
from kbtool.runners.base import Launch


def launch():
    return Launch(
        backend="numpy",
        python=sys.executable,
        module="kbtool.reference",
        version_of=["numpy"],
        extra_pythonpath=[CHECKOUT_ROOT],
        apply_keras_json=True,
    )
