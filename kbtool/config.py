"""keras.json: locate, read, validate and write it the way the Keras docs describe.

Location: `$KERAS_HOME/keras.json` when KERAS_HOME is set (Keras 2 treats KERAS_HOME as the
`.keras` directory itself), else `~/.keras/keras.json`. A missing file means the documented
defaults. `KERAS_BACKEND` overrides the file's backend. Keras 1.x files carry
`image_dim_ordering` ("tf"/"th") instead of `image_data_format`; they are read as such and
migrated on the next `set`.
"""
import datetime
import importlib
import json
import os
import re
from collections import OrderedDict

from . import files
from .errors import KbtoolError

DEFAULTS = OrderedDict(
    [
        ("image_data_format", "channels_last"),
        ("epsilon", 1e-07),
        ("floatx", "float32"),
        ("backend", "tensorflow"),
    ]
)
BUILTIN_BACKENDS = ("tensorflow", "theano", "cntk")
FLOATX = ("float16", "float32", "float64")
DATA_FORMATS = ("channels_first", "channels_last")
DIM_ORDERING_TO_FORMAT = {"tf": "channels_last", "th": "channels_first"}
# What Keras requires of a custom backend module (docs: "placeholder, variable and function").
CUSTOM_BACKEND_REQUIRED = ("placeholder", "variable", "function")
_MODULE_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$")


def config_path(environ=None):
    env = os.environ if environ is None else environ
    if env.get("KERAS_HOME"):
        return os.path.join(env["KERAS_HOME"], "keras.json")
    return os.path.join(os.path.expanduser("~"), ".keras", "keras.json")


class Setting(object):
    def __init__(self, key, value, source):
        self.key, self.value, self.source = key, value, source

    def as_dict(self):
        return {"value": self.value, "source": self.source}


def read_file(path):
    """Return the parsed JSON object of `path`, or None when the file does not exist."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise KbtoolError("cannot read {}: {}".format(path, exc.strerror))
    try:
        data = json.loads(text, object_pairs_hook=OrderedDict)
    except json.JSONDecodeError as exc:
        raise KbtoolError(
            "{}:{}:{}: not valid JSON ({}); fix it, or pass --force to `kbtool config set` "
            "to replace it (a backup is kept)".format(path, exc.lineno, exc.colno, exc.msg)
        )
    if not isinstance(data, dict):
        raise KbtoolError("{}:1: keras.json must hold a JSON object, found {}".format(path, type(data).__name__))
    return data


def effective(path=None, environ=None):
    """The settings Keras would use, each with where it came from."""
    env = os.environ if environ is None else environ
    path = path or config_path(env)
    data = read_file(path)
    settings = OrderedDict()
    for key, default in DEFAULTS.items():
        settings[key] = Setting(key, default, "default (no {})".format("file" if data is None else "key in file"))
    if data is not None:
        for key in DEFAULTS:
            if key in data:
                settings[key] = Setting(key, data[key], "file")
        if "image_data_format" not in data and "image_dim_ordering" in data:
            ordering = data["image_dim_ordering"]
            mapped = DIM_ORDERING_TO_FORMAT.get(ordering, ordering)
            settings["image_data_format"] = Setting(
                "image_data_format", mapped, "file (Keras 1.x image_dim_ordering={!r})".format(ordering)
            )
        for key, value in data.items():
            if key not in settings and key != "image_dim_ordering":
                settings[key] = Setting(key, value, "file (unknown key, kept)")
    if env.get("KERAS_BACKEND"):
        settings["backend"] = Setting("backend", env["KERAS_BACKEND"], "environment KERAS_BACKEND")
    return settings


def check_value(key, value, import_custom=False):
    """Return a problem string for `key=value`, or None when it is valid."""
    if key == "backend":
        if not isinstance(value, str):
            return "backend must be a string"
        if value in BUILTIN_BACKENDS:
            return None
        if not _MODULE_PATH.match(value):
            return "backend must be one of {} or a dotted module path like my_package.my_module, got {!r}".format(
                ", ".join(BUILTIN_BACKENDS), value)
        return check_custom_backend(value) if import_custom else None
    if key == "floatx":
        return None if value in FLOATX else "floatx must be one of {}, got {!r}".format(", ".join(FLOATX), value)
    if key == "image_data_format":
        return None if value in DATA_FORMATS else "image_data_format must be one of {}, got {!r}".format(
            ", ".join(DATA_FORMATS), value)
    if key == "epsilon":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            return "epsilon must be a positive float, got {!r}".format(value)
        return None
    if key == "image_dim_ordering":
        return None if value in DIM_ORDERING_TO_FORMAT else "image_dim_ordering must be 'tf' or 'th', got {!r}".format(value)
    return None


def check_custom_backend(module_path):
    """Import a custom backend module and name what it lacks of the documented minimum."""
    try:
        module = importlib.import_module(module_path)
    except Exception as exc:  # any import failure is the user's module failing, report it in one line
        return "backend module {!r} does not import: {}: {}".format(module_path, type(exc).__name__, exc)
    missing = [name for name in CUSTOM_BACKEND_REQUIRED if not callable(getattr(module, name, None))]
    if missing:
        return "backend module {!r} lacks {} (a Keras backend must provide {})".format(
            module_path, ", ".join(missing), ", ".join(CUSTOM_BACKEND_REQUIRED))
    return None


def validate(path=None, environ=None):
    """Problems in the file and environment, as 'key: message' strings (empty when valid)."""
    env = os.environ if environ is None else environ
    path = path or config_path(env)
    data = read_file(path) or {}
    problems = []
    for key, value in data.items():
        problem = check_value(key, value, import_custom=True)
        if problem:
            problems.append("{}: {}".format(path, problem))
    if env.get("KERAS_BACKEND"):
        problem = check_value("backend", env["KERAS_BACKEND"], import_custom=True)
        if problem:
            problems.append("KERAS_BACKEND: {}".format(problem))
    return problems


def parse_value(key, text):
    if key == "epsilon":
        try:
            return float(text)
        except ValueError:
            raise KbtoolError("epsilon must be a positive float, got {!r}".format(text))
    return text


def set_value(key, text, path=None, force=False, environ=None):
    """Set one key atomically. Returns a list of notes on what else happened (migration, backup)."""
    env = os.environ if environ is None else environ
    path = path or config_path(env)
    if key not in DEFAULTS:
        raise KbtoolError("unknown key {!r}; keras.json keys are {}".format(key, ", ".join(DEFAULTS)))
    value = parse_value(key, text)
    problem = check_value(key, value, import_custom=True)
    if problem:
        raise KbtoolError(problem)
    notes = []
    try:
        data = read_file(path)
    except KbtoolError:
        if not force:
            raise
        backup = "{}.bak-{}".format(path, datetime.datetime.now().strftime("%Y%m%d-%H%M%S-%f"))
        os.replace(path, backup)
        notes.append("unreadable {} moved to {}; starting from the defaults".format(path, backup))
        data = None
    if data is None:
        data = OrderedDict(DEFAULTS)
        notes.append("created {} with the documented defaults".format(path))
    if "image_dim_ordering" in data:
        ordering = data.pop("image_dim_ordering")
        if "image_data_format" not in data and ordering in DIM_ORDERING_TO_FORMAT:
            data["image_data_format"] = DIM_ORDERING_TO_FORMAT[ordering]
        notes.append("migrated Keras 1.x image_dim_ordering={!r} to image_data_format={!r}".format(
            ordering, data.get("image_data_format")))
    data[key] = value
    files.write_atomic(path, json.dumps(data, indent=4) + "\n")
    return notes
