"""Custom backends: any importable module with the Keras backend API.

`my_package.my_module` runs on kbtool's own interpreter with the user's PYTHONPATH;
`my_package.my_module@tensorflow` runs inside the managed environment of that backend.
"""
import sys

from ..config import _MODULE_PATH
from ..errors import KbtoolError
from .base import Launch


def is_custom(name):
    return bool(_MODULE_PATH.match(name.split("@", 1)[0]))


def launch(name, recipes):
    module, _, env_name = name.partition("@")
    if not env_name:
        return Launch(backend=name, python=sys.executable, module=module, version_of=["numpy"], apply_keras_json=True)
    if env_name not in recipes:
        raise KbtoolError("unknown environment {!r} in {!r}; managed environments: {}".format(
            env_name, name, ", ".join(recipes)))
    base = recipes[env_name].launch()
    base.backend, base.module, base.fallback_modules = name, module, []
    base.apply_keras_json, base.variants = True, (lambda case: [])  # a custom module is not keras.backend
    return base
