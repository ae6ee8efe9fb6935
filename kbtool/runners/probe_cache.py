"""What `kbtool backends` learnt from each backend's worker, kept so the next call answers within a second.

Starting a worker takes 1-20 s (TensorFlow's import), and what it says (status, versions, interpreter) changes only
when its environment does. So an *available* backend's answer is kept in KBTOOL_HOME/probes.json under the
identity of what ran it, and reused while that identity holds:

- the worker's command line and variables (module, shims, kbtool's worker script), kbtool's version and the
  modification times of kbtool's worker code;
- the interpreter: its path, the file it resolves to, that file's size and modification time;
- the env's install record (kbtool-env.json, which holds its `pip freeze`) and its lock file, by hash;
- the modification times of the interpreter's site-packages folders (pip installing or removing anything there
  changes them), and of the backend module's file the worker named;
- for a release (`tensorflow1[keras=2.2.4]`), the same of the base env it is layered on (its record and lock by
  hash, its site-packages' modification times): the release sees the base's packages, so pip changing the base
  changes what the release's worker says.

Checked on each read, with a few `stat` calls and two small hashes: an env that was removed or rebuilt, an
interpreter that is gone, a package installed or removed, a module edited: each makes the answer stale, and the
worker is started again. An answer older than `MAX_AGE` is not reused either. A backend that is not installed or
whose env is broken is told without a worker (cheap) and is never cached; nor is a worker that did not start
(the next call tries again). `--refresh` starts every worker again and keeps what they say.

Each entry read is checked (`invalid`: the type of every field used): one a hand edit or a crash left malformed is
treated as absent, its backend probed again and the entry rewritten, never a traceback.
"""

import glob
import hashlib
import json
import os
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from kbtool.runners import names
from kbtool.runners.base import ENV_RECORD, WORKER_MAIN, Launch, kbtool_home

CACHE_FILE = "probes.json"
CACHE_VERSION = 1
MAX_AGE = 7 * 24 * 3600.0  # seconds an answer is reused at most, whatever its identity says
AVAILABLE = "available"


def cache_path() -> str:
    return os.path.join(kbtool_home(), CACHE_FILE)


def _stat(path: str) -> Optional[List[int]]:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size]


def _digest(path: str) -> Optional[str]:
    try:
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read(1 << 22)).hexdigest()
    except OSError:
        return None


def _site_dirs(python: str) -> List[str]:
    """The site-packages (and dist-packages) folders under the interpreter's prefix, as given and as resolved; the
    controller's own when the worker runs on kbtool's Python."""
    prefixes = {os.path.dirname(os.path.dirname(python)), os.path.dirname(os.path.dirname(os.path.realpath(python)))}
    found = set()
    for prefix in prefixes:
        for kind in ("site-packages", "dist-packages"):
            found.update(glob.glob(os.path.join(prefix, "lib", "python*", kind)))
            found.update(glob.glob(os.path.join(prefix, "local", "lib", "python*", kind)))
    if os.path.realpath(python) == os.path.realpath(sys.executable):
        import site

        for path in list(site.getsitepackages()) + [site.getusersitepackages()]:
            if os.path.isdir(path):
                found.add(path)
    return sorted(found)


def env_dir_of(name: str) -> Optional[str]:
    """The kbtool env a backend runs in (a built-in recipe's, or a custom module's `@ENV`), or None."""
    from kbtool.runners.registry import recipe_of

    recipe = recipe_of(names.env_name(name))
    return recipe.env_dir() if recipe is not None else None


def identity(name: str, launch: Launch) -> str:
    """A hash of everything that decides what `name`'s worker says at start (see the module's docstring)."""
    from kbtool import __version__
    from kbtool.runners.envs import lock_path
    from kbtool.runners.registry import recipe_of

    python = launch.python
    worker_dir = os.path.dirname(WORKER_MAIN)
    env_dir = env_dir_of(name)
    recipe = recipe_of(names.env_name(name))
    parts: Dict[str, Any] = {
        "backend": name,
        "kbtool": __version__,
        "worker": {f: _stat(os.path.join(worker_dir, f)) for f in sorted(os.listdir(worker_dir)) if f.endswith(".py")},
        "argv": launch.argv(),
        "env": launch.env,
        "pythonpath": launch.extra_pythonpath,
        "python": python,
        "python_real": os.path.realpath(python),
        "python_stat": _stat(os.path.realpath(python)),
        "env_dir": env_dir,
        "record": _digest(os.path.join(env_dir, ENV_RECORD)) if env_dir else None,
        "lock": _digest(lock_path(recipe)) if recipe is not None else None,
        "site": {d: _stat(d) for d in _site_dirs(python)},
        "base": _base_identity(recipe),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _base_identity(recipe: Any) -> Optional[Dict[str, Any]]:
    """What a release's worker sees of the base env it is layered on (None for any other backend): pip installing
    into the base changes its site-packages' times, `env install --force` its record."""
    from kbtool.runners.envs import lock_path
    from kbtool.runners.registry import RECIPES

    if recipe is None or not recipe.layered_on or recipe.layered_on not in RECIPES:
        return None
    base = RECIPES[recipe.layered_on]
    return {
        "record": _digest(os.path.join(base.env_dir(), ENV_RECORD)),
        "lock": _digest(lock_path(base)),
        "site": {d: _stat(d) for d in _site_dirs(base.env_python())},
    }


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _optional(value: Any, kind: Any) -> bool:
    return value is None or isinstance(value, kind)


def invalid(name: str, entry: Any) -> Optional[str]:
    """Why a kept entry cannot be used (one phrase: the field and what is wrong), None when every field the cache and
    `kbtool backends` use has its type."""
    if not isinstance(entry, dict):
        return f"an entry is a JSON object, not {type(entry).__name__}"
    info = entry.get("info")
    stat = entry.get("module_stat")
    checks = [
        ("key", isinstance(entry.get("key"), str)),
        ("probed_at", _is_number(entry.get("probed_at"))),
        ("info", isinstance(info, dict)),
        ("module_stat", stat is None or (isinstance(stat, list) and all(_is_number(n) for n in stat))),
    ]
    if isinstance(info, dict):
        versions = info.get("versions")
        checks += [
            ("info.name", info.get("name") == name),
            ("info.status", isinstance(info.get("status"), str)),
            ("info.kind", _optional(info.get("kind"), str)),
            ("info.python", _optional(info.get("python"), str)),
            ("info.module", _optional(info.get("module"), str)),
            ("info.module_file", _optional(info.get("module_file"), str)),
            ("info.reason", _optional(info.get("reason"), str)),
            ("info.import_seconds", info.get("import_seconds") is None or _is_number(info.get("import_seconds"))),
            (
                "info.versions",
                isinstance(versions, dict) and all(isinstance(v, str) for v in versions.values()),
            ),
            ("info.base", _optional(info.get("base"), dict)),
        ]
    wrong = [field for field, ok in checks if not ok]
    return f"{wrong[0]} is missing or of the wrong type" if wrong else None


class ProbeCache:
    """The cache file, read once and written once (after the probes), under a lock for the probing threads."""

    def __init__(self, path: Optional[str] = None, clock: Callable[[], float] = time.time) -> None:
        self.path = path or cache_path()
        self.clock = clock
        self._lock = threading.Lock()
        self._entries: Dict[str, Any] = {}
        self._changed = False
        self.invalid: Dict[str, str] = {}  # backend: why its kept entry was dropped unread
        from kbtool.files import MAX_FILE_BYTES, Unreadable, read_bytes

        try:
            # Through read_bytes: a FIFO or a device (/dev/zero) in its place is unreadable, not a hang.
            raw = read_bytes(self.path, MAX_FILE_BYTES)
            data = json.loads(raw.decode("utf-8")) if raw is not None and len(raw) <= MAX_FILE_BYTES else None
            if (
                isinstance(data, dict)
                and data.get("version") == CACHE_VERSION
                and isinstance(data.get("backends"), dict)
            ):
                self._entries = data["backends"]
        except (
            OSError,
            ValueError,
            RecursionError,
            Unreadable,
        ):  # none yet, or unreadable: every backend is probed (and the file rewritten)
            pass
        self._drop_invalid()

    def _drop_invalid(self) -> None:
        """Forget each entry `invalid` refuses, so its backend is probed again and the file rewritten without it."""
        for name in list(self._entries):
            why = invalid(name, self._entries[name])
            if why is not None:
                self.invalid[name] = why
                del self._entries[name]
                self._changed = True

    def get(self, name: str, key: str) -> Optional[Dict[str, Any]]:
        """The kept answer for `name` if its identity is still `key`, it is young enough and the module file the
        worker named is unchanged; else None."""
        with self._lock:
            entry = self._entries.get(name)
        if not isinstance(entry, dict) or entry.get("key") != key or invalid(name, entry) is not None:
            return None
        age = self.clock() - float(entry["probed_at"])
        if not 0 <= age <= MAX_AGE:
            return None
        module_file = entry["info"].get("module_file")
        if module_file and _stat(module_file) != entry.get("module_stat"):
            return None
        if entry["info"].get("status") != AVAILABLE:
            return None
        return dict(entry["info"], probed_at=entry.get("probed_at"))

    def put(self, name: str, key: str, info: Dict[str, Any]) -> None:
        """Keep an available backend's answer (any other is dropped: the next call asks again)."""
        with self._lock:
            self._changed = True
            if info.get("status") != AVAILABLE:
                self._entries.pop(name, None)
                return
            module_file = info.get("module_file")
            self._entries[name] = {
                "key": key,
                "probed_at": self.clock(),
                "info": info,
                "module_stat": _stat(module_file) if module_file else None,
            }

    def drop(self, name: str) -> None:
        with self._lock:
            if self._entries.pop(name, None) is not None:
                self._changed = True

    def save(self) -> Optional[str]:
        """Write the file if anything changed; returns why it could not be written (one line), else None."""
        from kbtool.files import write_atomic

        with self._lock:
            if not self._changed:
                return None
            text = json.dumps({"version": CACHE_VERSION, "backends": self._entries}, indent=1, sort_keys=True)
        try:
            os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
            write_atomic(self.path, text + "\n")
        except OSError as exc:
            return f"cannot write {self.path}: {exc.strerror or exc}"
        return None


Probe = Callable[[str, Any], Dict[str, Any]]  # session.probe: start `name`'s worker, say what it answered


def probe_one(name: str, cache: ProbeCache, cancel: Any, probe: Probe, refresh: bool = False) -> Dict[str, Any]:
    """`name`'s info as `kbtool backends` shows it, with `cached`: True when it came from the cache. A backend that
    cannot start a worker here (not installed, broken env) is told fresh every time by `probe` (session.probe)."""
    from kbtool.runners.base import Unavailable
    from kbtool.runners.registry import launch_for

    key = None
    try:
        launch = launch_for(name)
        key = identity(name, launch)
    except Unavailable:
        cache.drop(name)
    except OSError:  # the identity cannot be read: probe without the cache
        pass
    if key is not None and not refresh:
        kept = cache.get(name, key)
        if kept is not None:
            return dict(kept, cached=True)
    info = probe(name, cancel)
    if key is not None and not getattr(cancel, "is_set", lambda: False)():
        cache.put(name, key, info)
    return dict(info, cached=False)


def wanted_backends(extra: Sequence[str] = ()) -> List[str]:
    """Every built-in backend, then the custom ones asked for, once each."""
    from kbtool.runners.registry import BUILTIN

    return list(BUILTIN) + [n for n in dict.fromkeys(extra) if n not in BUILTIN]


def probe_all(
    names: Sequence[str], cache: ProbeCache, cancel: Any, probe: Probe, refresh: bool = False
) -> List[Tuple[str, Any]]:
    """Start probing every backend of `names` in parallel; returns (name, future) in order."""
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=max(1, len(names)))
    try:
        return [(name, pool.submit(probe_one, name, cache, cancel, probe, refresh)) for name in names]
    finally:
        pool.shutdown(wait=False)
