"""kbtool's shared words, defined once: the evaluation modes, and the keras.json settings.

This module is the ground floor: it imports nothing from kbtool, so every layer may use it. The backend worker
(kbtool/worker/, which runs on Python 3.6 in a backend's own env and imports nothing from outside its
package) keeps its own copy of the case settings' keys; tests/test_vocabulary.py holds that copy equal to this one.

keras.json, as the Keras docs describe it: `image_data_format`, `epsilon`, `floatx` and `backend`, each with a
documented default (written in this order, as Keras writes a new file). Keras 1.x files carry `image_dim_ordering`
("tf"/"th") instead of `image_data_format` (LEGACY_DIM_ORDERING). Every setting but `backend` changes what a case
computes; those are CASE_KEYS, the settings a case runs under.
"""

import enum
import math
import re
from collections import OrderedDict
from typing import Callable, Dict, Optional, Tuple


class Mode(str, enum.Enum):
    """How a case is evaluated: eagerly (K.eval of the op on constants) or symbolically (placeholders, K.function)."""

    EAGER = "eager"
    SYMBOLIC = "symbolic"

    def __str__(self) -> str:  # "eager", never "Mode.EAGER" (Python 3.11 formats str mix-ins by their name)
        return self.value


# every mode, in the order a case runs them (plain strings: what the spec, the worker and the reports spell)
MODES: Tuple[str, ...] = tuple(mode.value for mode in Mode)

# --device: where a backend's engine computes (kbtool sets KBTOOL_DEVICE in the worker of a backend whose recipe
# declares devices); the first is the default, and a result on it keeps its recorded-results key unchanged
DEVICES: Tuple[str, ...] = ("cpu", "gpu")
DEFAULT_DEVICE = DEVICES[0]
# Without --jobs, at most this many workers of one backend share a GPU (with --jobs N: N; runners.base.on_device). A
# case's time on a GPU is mostly the engine compiling it on the CPU, so workers help, but each holds a CUDA context and
# compile caches of its own on the device, and the machine's cores also serve the other backends' workers: 4 each.
DEFAULT_GPU_WORKERS = 4
# --precision (KBTOOL_PRECISION): each engine's own default, or its most precise float32 setting (no TF32)
PRECISIONS: Tuple[str, ...] = ("default", "highest")
DEFAULT_PRECISION = PRECISIONS[0]


def choice_problem(flag: str, value: object, choices: Tuple[str, ...]) -> Optional[str]:
    """Why `value` is no value of `flag` (one of `choices`), in one line; None when it is one."""
    return None if value in choices else "{} takes one of {} (got {!r})".format(flag, ", ".join(choices), value)


# Keras's own backends (any other `backend` value is a module Keras imports)
BUILTIN_BACKENDS: Tuple[str, ...] = ("tensorflow", "theano", "cntk")
FLOATX: Tuple[str, ...] = ("float16", "float32", "float64")
DATA_FORMATS: Tuple[str, ...] = ("channels_first", "channels_last")
# Keras 1.x's image_dim_ordering and the image_data_format each value means
LEGACY_DIM_ORDERING: Dict[str, str] = {"tf": "channels_last", "th": "channels_first"}
# Keras 2's load_backend imports any other name as a module: a plain `my_backend` or a dotted `pkg.my_backend`
MODULE_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def shown(value: object) -> str:
    """A value from keras.json or the command line as a message quotes it: repr, an integer of many digits by its
    length, anything long clipped (a message stays one short line)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**20:
        try:
            return f"an integer of {len(str(abs(value)))} digits"
        except ValueError:  # past Python's limit on converting an int to text
            return "an integer of more than 4300 digits"
    from kbtool.files import quote  # the one clipping rule of messages

    return str(quote(value))


def _finite(number: float) -> bool:
    try:
        return math.isfinite(number)
    except OverflowError:  # an int too large for a float
        return False


def _one_of(key: str, choices: Tuple[str, ...]) -> Callable[[object], Optional[str]]:
    def check(value: object) -> Optional[str]:
        if isinstance(value, str) and value in choices:  # isinstance first: a list or object is unhashable
            return None
        return "{} must be one of {}, got {}".format(key, ", ".join(choices), shown(value))

    return check


def _check_epsilon(value: object) -> Optional[str]:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or not _finite(value):
        return f"epsilon must be a positive float (and finite), got {shown(value)}"
    return None


def _check_backend(value: object) -> Optional[str]:
    """A built-in backend's name or a module path; whether the module imports is for the caller to ask."""
    if not isinstance(value, str):
        return "backend must be a string"
    if value in BUILTIN_BACKENDS or MODULE_PATH.fullmatch(value):
        return None
    return (
        "backend must be one of {} or a module name (my_backend, or a dotted module path like "
        "my_package.my_module), got {}"
    ).format(", ".join(BUILTIN_BACKENDS), shown(value))


def _check_dim_ordering(value: object) -> Optional[str]:
    if isinstance(value, str) and value in LEGACY_DIM_ORDERING:
        return None
    return f"image_dim_ordering must be 'tf' or 'th', got {shown(value)}"


def _epsilon_from_text(text: str) -> float:
    """`kbtool config set epsilon 1e-5` and `--keras-config epsilon=1e-5`: a ValueError for anything not a float,
    and for digits past the float range (1e999 would read as inf)."""
    value = float(text)
    if math.isinf(value) and re.fullmatch(r"\s*[+-]?[0-9._]+([eE][+-]?[0-9_]+)?\s*", text):
        raise ValueError(
            f"epsilon must be a positive float (and finite), got {shown(text)}: a number past the float range"
        )
    return value


class Setting:
    """One keras.json key: its documented default, its choices (None: not a fixed list), how a value is checked
    (a problem string, or None when valid) and how a command-line text becomes a value."""

    def __init__(
        self,
        key: str,
        default: object,
        choices: Optional[Tuple[str, ...]],
        check: Callable[[object], Optional[str]],
        from_text: Callable[[str], object] = str,
    ) -> None:
        self.key, self.default, self.choices, self.check, self.from_text = key, default, choices, check, from_text

    def __repr__(self) -> str:
        return f"Setting({self.key!r}, default={self.default!r})"


SETTINGS: "OrderedDict[str, Setting]" = OrderedDict(
    (setting.key, setting)
    for setting in (
        Setting("image_data_format", "channels_last", DATA_FORMATS, _one_of("image_data_format", DATA_FORMATS)),
        Setting("epsilon", 1e-07, None, _check_epsilon, _epsilon_from_text),
        Setting("floatx", "float32", FLOATX, _one_of("floatx", FLOATX)),
        Setting("backend", "tensorflow", None, _check_backend),
    )
)
# the keys of keras.json, in the order Keras writes a new file
KEYS: Tuple[str, ...] = tuple(SETTINGS)
# the documented defaults, as a new keras.json holds them
DEFAULTS: "OrderedDict[str, object]" = OrderedDict((key, s.default) for key, s in SETTINGS.items())
# the settings a case runs under (all but `backend`), in the order kbtool reports them
CASE_KEYS: Tuple[str, ...] = ("image_data_format", "floatx", "epsilon")
CASE_DEFAULTS: Dict[str, object] = {key: SETTINGS[key].default for key in CASE_KEYS}
# the fixed choices of the settings that have them
CHOICES: Dict[str, Tuple[str, ...]] = {key: s.choices for key, s in SETTINGS.items() if s.choices is not None}
# keys Keras 1.x wrote that a current file may still carry, with their checks
LEGACY: Dict[str, Callable[[object], Optional[str]]] = {"image_dim_ordering": _check_dim_ordering}


def check(key: str, value: object) -> Optional[str]:
    """The problem with `key=value` in keras.json, or None when Keras accepts it (an unknown key: None, kept)."""
    if key in SETTINGS:
        return SETTINGS[key].check(value)
    if key in LEGACY:
        return LEGACY[key](value)
    return None
