"""keras.json: locate, read, validate and write it the way the Keras docs describe.

Location: `$KERAS_HOME/keras.json` when KERAS_HOME is set (Keras 2 treats KERAS_HOME as the
`.keras` directory itself), else `~/.keras/keras.json`. A missing file means the documented
defaults. `KERAS_BACKEND` overrides the file's backend. Keras 1.x files carry
`image_dim_ordering` ("tf"/"th") instead of `image_data_format`; they are read as such and
migrated on the next `set`.

Writers (`set_value`) hold an exclusive lock (`keras.json.lock` beside the file) across
read-modify-write, so concurrent `kbtool config set`s never lose each other's keys; readers need
no lock because every write replaces the file in one rename. A file kbtool cannot read as a JSON
object (not UTF-8, not JSON, Infinity/NaN, nested too deeply, too large) is `CorruptFile`: reported
in one line, never overwritten unless `--force` (which backs it up first, under the lock).
"""

import contextlib
import datetime
import fcntl
import json
import math
import os
import re
import shutil
import subprocess
import time
from collections import OrderedDict
from typing import Any, Dict, Iterator, List, Mapping, Optional

from kbtool import files, vocabulary
from kbtool.errors import KbtoolError
from kbtool.vocabulary import shown

DEFAULTS = vocabulary.DEFAULTS  # the documented defaults, in the order Keras writes them
# What Keras requires of a custom backend module (docs: "placeholder, variable and function").
CUSTOM_BACKEND_REQUIRED = ("placeholder", "variable", "function")
MAX_BYTES = 1 << 20  # a keras.json is a few hundred bytes; anything this big is not one
MAX_DEPTH = 100  # nesting levels; deeper files are refused the same way by show, set and validate
LOCK_TIMEOUT = 30.0  # seconds `set` waits for another writer before giving up
_FORCE_HINT = "; fix it, or pass --force to `kbtool config set` to replace it (a backup is kept)"
# mkstemp's names for files.write_atomic's temporaries: "." + basename + "." + 8 random chars + ".tmp".
_TEMP_NAME = r"^\.{}\.[a-z0-9_]{{8}}\.tmp$"
# A JSON string (skipped) or a bare token that could be a number or constant (group 1).
_STRING_OR_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|(-?Infinity|NaN|-?[0-9][0-9.eE+-]*)')


def config_path(environ: Optional[Mapping[str, str]] = None) -> str:
    env = os.environ if environ is None else environ
    if env.get("KERAS_HOME"):
        return os.path.join(env["KERAS_HOME"], "keras.json")
    return os.path.join(os.path.expanduser("~"), ".keras", "keras.json")


class CorruptFile(KbtoolError):
    """keras.json exists but its content is not a JSON object kbtool can use; `set --force` replaces it."""


class Setting:
    def __init__(self, key: str, value: Any, source: str) -> None:
        self.key, self.value, self.source = key, value, source

    def as_dict(self) -> Dict[str, Any]:
        return {"value": self.value, "source": self.source}


def read_file(path: str) -> Optional[Dict[str, Any]]:
    """Return the parsed JSON object of `path`, or None when the file does not exist."""
    try:  # only a regular file is read, opened without blocking (files.read_bytes)
        raw = files.read_bytes(path, MAX_BYTES)
    except files.Unreadable as exc:
        raise KbtoolError(f"{path}: cannot read: {exc}")
    if raw is None:
        return None
    if len(raw) > MAX_BYTES:
        raise CorruptFile(f"{path}: larger than {MAX_BYTES} bytes, not a keras.json{_FORCE_HINT}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorruptFile(f"{path}: not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start}){_FORCE_HINT}")
    not_json: List[str] = []  # Python's json reads Infinity, NaN and 1e400 (inf); JSON has no such numbers

    def constant(token: str) -> float:
        not_json.append(token)
        return float(token)

    def number(token: str) -> float:
        value = float(token)
        if not math.isfinite(value):
            not_json.append(token)
        return value

    try:
        data = json.loads(text, object_pairs_hook=OrderedDict, parse_constant=constant, parse_float=number)
    except json.JSONDecodeError as exc:
        raise CorruptFile(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg}){_FORCE_HINT}")
    except RecursionError:
        raise CorruptFile(f"{path}: nested too deeply for Python's JSON reader, not a keras.json{_FORCE_HINT}")
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise CorruptFile("{}: not valid JSON ({}){}".format(path, str(exc).split(";")[0], _FORCE_HINT))
    if not_json:
        raise CorruptFile(
            f"{path}{_position(text, not_json[0])}: not valid JSON ({not_json[0]} is not a finite JSON number){_FORCE_HINT}"
        )
    if not isinstance(data, dict):
        raise CorruptFile(f"{path}:1: keras.json must hold a JSON object, found {type(data).__name__}{_FORCE_HINT}")
    if _depth(data) > MAX_DEPTH:
        raise CorruptFile(f"{path}: nested deeper than {MAX_DEPTH} levels, not a keras.json{_FORCE_HINT}")
    return data


def _position(text: str, token: str) -> str:
    """':line:col' of the first `token` outside a string, or '' when it cannot be found."""
    for match in _STRING_OR_TOKEN.finditer(text):
        if match.group(1) == token:
            start = match.start(1)
            return ":{}:{}".format(text.count("\n", 0, start) + 1, start - text.rfind("\n", 0, start))
    return ""


def _depth(data: Any) -> int:
    """Nesting depth of parsed JSON, without recursion (the parser's limit is not ours)."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        value, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)
    return deepest


def effective(path: Optional[str] = None, environ: Optional[Mapping[str, str]] = None) -> Dict[str, Setting]:
    """The settings Keras would use, each with where it came from."""
    env = os.environ if environ is None else environ
    path = path or config_path(env)
    data = read_file(path)
    settings: Dict[str, Setting] = OrderedDict()
    for key, default in DEFAULTS.items():
        settings[key] = Setting(key, default, "default (no {})".format("file" if data is None else "key in file"))
    if data is not None:
        for key in DEFAULTS:
            if key in data:
                settings[key] = Setting(key, data[key], "file")
        if "image_data_format" not in data and "image_dim_ordering" in data:
            ordering = data["image_dim_ordering"]
            mapped = vocabulary.LEGACY_DIM_ORDERING.get(ordering, ordering) if isinstance(ordering, str) else ordering
            settings["image_data_format"] = Setting(
                "image_data_format", mapped, f"file (Keras 1.x image_dim_ordering={ordering!r})"
            )
        for key, value in data.items():
            if key not in settings and key != "image_dim_ordering":
                settings[key] = Setting(key, value, "file (unknown key, kept)")
    if env.get("KERAS_BACKEND"):
        settings["backend"] = Setting("backend", env["KERAS_BACKEND"], "environment KERAS_BACKEND")
    return settings


def check_value(key: str, value: Any, import_custom: bool = False, timeout: Optional[float] = None) -> Optional[str]:
    """Return a problem string for `key=value`, or None when it is valid (vocabulary.SETTINGS checks each key; a
    custom backend module is also imported when `import_custom`)."""
    problem = vocabulary.check(key, value)
    if problem is None and key == "backend" and import_custom and value not in vocabulary.BUILTIN_BACKENDS:
        return check_custom_backend(value, timeout)
    return problem


IMPORT_TIMEOUT = 60.0  # seconds a custom backend module may take to import in `config`'s check
# Run in a child process (the module's code never runs in kbtool's): import the module, look for what Keras requires,
# and write one JSON line to the pipe whose fd is argv[2]. A module that exits, crashes or hangs leaves no answer.
_IMPORT_CHECK = r"""
import json, os, sys
module_path, fd, required = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(",")
def answer(**kw):
    data = (json.dumps(kw) + "\n").encode()
    while data:
        data = data[os.write(fd, data):]
def one_line(exc):
    message = " ".join(str(exc).split())
    return type(exc).__name__ + (": " + message if message else "")
sys.path.append(os.getcwd())
try:
    import importlib
    module = importlib.import_module(module_path)
except KeyboardInterrupt:
    answer(interrupted=True)
    os._exit(0)
except BaseException as exc:
    answer(problem="does not import: " + one_line(exc))
    os._exit(0)
missing = []
for name in required:
    try:
        if not callable(getattr(module, name, None)):
            missing.append(name)
    except KeyboardInterrupt:
        answer(interrupted=True)
        os._exit(0)
    except BaseException as exc:
        answer(problem="raised " + one_line(exc) + " when asked for " + name)
        os._exit(0)
answer(missing=missing)
os._exit(0)
"""


def check_custom_backend(module_path: str, timeout: Optional[float] = None) -> Optional[str]:
    """Import a custom backend module in a child process (kbtool's Python, the current directory and PYTHONPATH on
    its path, as a worker would run it) and name what it lacks of the documented minimum.

    Returns a problem with the module (it raises at import, lacks a required function), or None. A module that
    exits the process, crashes it or does not finish importing within `timeout` seconds is a KbtoolError: nothing
    can be said of it, so `config` neither accepts nor writes it."""
    import signal
    import subprocess
    import sys

    timeout = IMPORT_TIMEOUT if timeout is None else timeout
    read_fd, write_fd = os.pipe()
    paths = [os.getcwd()] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths))
    argv = [sys.executable, "-c", _IMPORT_CHECK, module_path, str(write_fd), ",".join(CUSTOM_BACKEND_REQUIRED)]
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(write_fd,),
            env=env,
            start_new_session=True,  # its own process group: a timeout or Ctrl-C kills all it started
        )
    except OSError as exc:
        os.close(read_fd)
        raise KbtoolError(f"cannot check backend module {shown(module_path)}: cannot start {sys.executable}: {exc}")
    finally:
        os.close(write_fd)
    try:
        code = _wait(proc, timeout)
        _kill_group(proc, signal.SIGKILL)  # what it started and left running (it could hold the pipe open)
        raw = _read_ready(read_fd)
    except BaseException:  # Ctrl-C while it imports: nothing of it is left running
        _kill_group(proc, signal.SIGKILL)
        raise
    finally:
        os.close(read_fd)
    name = f"backend module {shown(module_path)}"
    if code is None:
        raise KbtoolError(f"{name} did not finish importing within {timeout:g} s")
    answer = _import_answer(raw, code, name)
    if answer.get("interrupted"):
        raise KeyboardInterrupt
    if answer.get("problem"):
        return f"{name} {answer['problem']}"
    missing = answer.get("missing") or []
    if missing:
        return "{} lacks {} (a Keras backend must provide {})".format(
            name, ", ".join(missing), ", ".join(CUSTOM_BACKEND_REQUIRED)
        )
    return None


def _import_answer(raw: bytes, code: int, name: str) -> Dict[str, Any]:
    """The JSON line the importing process wrote; a KbtoolError saying how it ended when it wrote none."""
    import signal

    try:
        answer = json.loads(raw.decode("utf-8").splitlines()[0])
    except (ValueError, IndexError):
        answer = None
    if not isinstance(answer, dict):
        if code < 0:
            try:
                how = f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"was killed by signal {-code}"
        else:
            how = f"exited (exit code {code})"
        raise KbtoolError(f"{name}: the process importing it {how} before the import finished")
    return answer


def _wait(proc: "subprocess.Popen[bytes]", timeout: float) -> Optional[int]:
    """The child's exit status, or None when it ran past `timeout` (then its process group is killed)."""
    import signal
    import subprocess

    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc, signal.SIGKILL)
        return None


def _read_ready(fd: int) -> bytes:
    """What the pipe holds now (at most 1 MB), without waiting for a writer that may never close it."""
    os.set_blocking(fd, False)
    chunks: List[bytes] = []
    try:
        while sum(map(len, chunks)) < 1 << 20:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    except BlockingIOError:
        pass
    return b"".join(chunks)


def _kill_group(proc: "subprocess.Popen[bytes]", signum: int) -> None:
    try:
        os.killpg(proc.pid, signum)
    except OSError:
        pass
    try:
        proc.wait(5)
    except Exception:
        pass


def validate(
    path: Optional[str] = None, environ: Optional[Mapping[str, str]] = None, timeout: Optional[float] = None
) -> List[str]:
    """Problems in the file and environment, as 'key: message' strings (empty when valid)."""
    env = os.environ if environ is None else environ
    path = path or config_path(env)
    problems: List[str] = []
    try:
        data = read_file(path) or {}
    except KbtoolError as exc:  # an unreadable file is the first problem; the environment is still checked
        problems.append(str(exc))
        data = {}
    for key, value in data.items():
        problem = check_value(key, value, import_custom=True, timeout=timeout)
        if problem:
            problems.append(f"{path}: {problem}")
    if env.get("KERAS_BACKEND"):
        problem = check_value("backend", env["KERAS_BACKEND"], import_custom=True, timeout=timeout)
        if problem:
            problems.append(f"KERAS_BACKEND: {problem}")
    return problems


def parse_value(key: str, text: str) -> Any:
    try:
        return vocabulary.SETTINGS[key].from_text(text)
    except ValueError as exc:  # the parser's own words where it has them (a number past the float range)
        said = str(exc)
        raise KbtoolError(
            said if said.startswith(key) else vocabulary.check(key, text) or f"{key}: cannot read {shown(text)}"
        )


def set_value(
    key: str,
    text: str,
    path: Optional[str] = None,
    force: bool = False,
    environ: Optional[Mapping[str, str]] = None,
    timeout: Optional[float] = None,
) -> List[str]:
    """Set one key atomically. Returns a list of notes on what else happened (migration, backup)."""
    env = os.environ if environ is None else environ
    path = path or config_path(env)
    if key not in vocabulary.SETTINGS:
        raise KbtoolError("unknown key {}; keras.json keys are {}".format(shown(key), ", ".join(vocabulary.KEYS)))
    value = parse_value(key, text)
    problem = check_value(key, value, import_custom=True, timeout=timeout)
    if problem:
        raise KbtoolError(problem)
    notes: List[str] = []
    with _locked(path):
        removed = _remove_stale_temps(path)
        if removed:
            notes.append(f"removed {removed} temporary file(s) left by an interrupted write beside {path}")
        try:
            data = read_file(path)
        except CorruptFile:  # read under the lock: only a file that is unreadable now is backed up
            if not force:
                raise
            backup = _backup(path)
            notes.append(f"unreadable {path} backed up to {backup}; starting from the defaults")
            data = None
        if data is None:
            data = OrderedDict(DEFAULTS)
            notes.append(f"created {path} with the documented defaults")
        ordering = data.get("image_dim_ordering")
        if (
            isinstance(ordering, str) and ordering in vocabulary.LEGACY_DIM_ORDERING
        ):  # an invalid one stays for validate
            del data["image_dim_ordering"]
            if "image_data_format" not in data:
                data["image_data_format"] = vocabulary.LEGACY_DIM_ORDERING[ordering]
            notes.append(
                "migrated Keras 1.x image_dim_ordering={!r} to image_data_format={!r}".format(
                    ordering, data.get("image_data_format")
                )
            )
        data[key] = value
        text = json.dumps(data, indent=4, allow_nan=False) + "\n"
        try:
            files.write_atomic(path, text)
        except OSError as exc:
            raise KbtoolError(f"{path}: cannot write: {_os_reason(exc, path)}")
    return notes


def _os_reason(exc: OSError, path: str) -> str:
    """An OSError in a few words, naming the file it concerns when that is not `path`."""
    where = exc.filename if exc.filename and exc.filename != path else None
    reason = exc.strerror or str(exc)
    return f"{where}: {reason}" if where else reason


def _folder_problem(folder: str) -> Optional[str]:
    """Why keras.json's folder cannot be made, when an existing part of it is not a directory."""
    probe = os.path.abspath(folder)
    while not os.path.exists(probe) and os.path.dirname(probe) != probe:
        probe = os.path.dirname(probe)
    return None if os.path.isdir(probe) else f"{probe} is not a directory"


@contextlib.contextmanager
def _locked(path: str) -> Iterator[None]:
    """Hold `keras.json.lock` (beside the real file) exclusively; flock dies with its process, never stale."""
    real = os.path.realpath(path)
    folder = os.path.dirname(real)
    problem = _folder_problem(folder)
    if problem:
        raise KbtoolError(f"{path}: cannot write: {problem}")
    lock_path = real + ".lock"
    try:
        os.makedirs(folder, exist_ok=True)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as exc:
        raise KbtoolError(f"{path}: cannot write: {_os_reason(exc, path)}")
    try:
        deadline = time.monotonic() + LOCK_TIMEOUT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise KbtoolError(
                        f"{path}: cannot write: another process has held {lock_path} for {LOCK_TIMEOUT:g} s"
                    )
                time.sleep(0.005)
            except OSError as exc:
                raise KbtoolError(f"{path}: cannot write: cannot lock {lock_path}: {exc.strerror}")
        yield
    finally:
        os.close(fd)


def _remove_stale_temps(path: str) -> int:
    """Delete write_atomic temporaries of keras.json that a killed writer left (only writers holding the lock
    make them, so under the lock none is in use). They never shadow keras.json: nothing reads them."""
    real = os.path.realpath(path)
    folder, pattern = os.path.dirname(real), re.compile(_TEMP_NAME.format(re.escape(os.path.basename(real))))
    removed = 0
    try:
        names = os.listdir(folder)
    except OSError:
        return 0
    for name in names:
        if pattern.match(name):
            try:
                os.unlink(os.path.join(folder, name))
                removed += 1
            except OSError:
                pass
    return removed


def _backup(path: str) -> str:
    """Keep the unreadable file as `keras.json.bak-<time>` beside it (a hard link, else a copy), leaving the file
    in place until the new one replaces it, so a reader never finds keras.json missing."""
    real = os.path.realpath(path)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    for attempt in range(100):
        backup = "{}.bak-{}{}".format(real, stamp, f"-{attempt}" if attempt else "")
        try:
            try:
                os.link(real, backup)
            except FileExistsError:
                continue
            except OSError:  # no hard links on this file system
                with open(real, "rb") as src, open(backup, "xb") as dst:
                    shutil.copyfileobj(src, dst)
            return backup
        except FileExistsError:
            continue
        except OSError as exc:
            raise KbtoolError(f"{path}: cannot back up: {_os_reason(exc, path)}")
    raise KbtoolError(f"{path}: cannot back up: too many backups named {real}.bak-{stamp}*")
