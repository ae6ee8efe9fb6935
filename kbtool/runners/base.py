"""What starting a backend's worker takes, from the controller's side: its Launch (interpreter, module, shims,
environment, devices), kbtool's home and env folders, the private keras.json a worker reads, and Unavailable (why a
backend cannot run). How a built-in backend's env is made is its Recipe (kbtool/runners/recipes/)."""

import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from kbtool.vocabulary import CASE_DEFAULTS, DEFAULT_DEVICE, DEFAULT_GPU_WORKERS, DEFAULT_PRECISION, MODES

WORKER_MAIN = os.path.join(os.path.dirname(os.path.dirname(__file__)), "worker", "main.py")


def kbtool_home() -> str:
    """$KBTOOL_HOME, else ~/.cache/kbtool, as an absolute path (a worker runs in a scratch folder of its own, where a
    relative env interpreter is not found); a KbtoolError (one line) when it, or the nearest part of it that
    exists, is not a directory (a file, a dangling symlink), so no caller fails later with NotADirectoryError."""
    from kbtool.errors import KbtoolError

    home = os.environ.get("KBTOOL_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "kbtool")
    probe = os.path.abspath(home)
    while not os.path.lexists(probe) and os.path.dirname(probe) != probe:
        probe = os.path.dirname(probe)
    if not os.path.isdir(probe):
        what = "a dangling symlink" if os.path.islink(probe) and not os.path.exists(probe) else "not a directory"
        name = f"KBTOOL_HOME={home}" if os.environ.get("KBTOOL_HOME") else f"kbtool's home {home}"
        where = "" if probe == os.path.abspath(home) else f": {probe}"
        raise KbtoolError(f"{name}{where} is {what}")
    return os.path.abspath(home)


def envs_dir() -> str:
    """kbtool_home()/envs; a KbtoolError when it exists and is not a directory."""
    from kbtool.errors import KbtoolError

    path = os.path.join(kbtool_home(), "envs")
    if os.path.lexists(path) and not os.path.isdir(path):
        raise KbtoolError(f"{path} is not a directory (kbtool keeps its backend environments there)")
    return path


def keras_home_for(keras_config: Optional[Mapping[str, Any]] = None) -> str:
    """A private KERAS_HOME whose keras.json holds exactly these settings (one directory per set of settings).

    Under kbtool's home; where that cannot be written (read-only, full), a temporary folder of this process
    instead, said once on stderr: the workers still run."""
    from kbtool.files import write_atomic

    config = dict(CASE_DEFAULTS, **(keras_config or {}))
    name = "_".join(f"{k}-{config[k]}" for k in sorted(config))
    text = json.dumps(dict(config), indent=4, sort_keys=True) + "\n"
    home = os.path.join(kbtool_home(), "keras_home", name)
    try:
        _write_keras_home(home, text, write_atomic)
    except OSError as exc:
        global _FALLBACK_HOME
        if _FALLBACK_HOME is None:
            import atexit
            import tempfile

            _FALLBACK_HOME = tempfile.mkdtemp(prefix="kbtool-keras-home-")
            atexit.register(shutil.rmtree, _FALLBACK_HOME, True)
            sys.stderr.write(
                f"kbtool: warning: cannot write {exc.filename or home}: {exc.strerror or exc}; the workers' keras.json files go to {_FALLBACK_HOME} instead\n"
            )
        home = os.path.join(_FALLBACK_HOME, name)
        _write_keras_home(home, text, write_atomic)
    return home


_FALLBACK_HOME: Optional[str] = None  # this process's temporary KERAS_HOME folder when kbtool's home cannot be written


def _write_keras_home(home: str, text: str, write_atomic: Callable[[str, str], None]) -> None:
    os.makedirs(home, exist_ok=True)
    path = os.path.join(home, "keras.json")
    try:
        with open(path) as f:
            current = f.read()
    except OSError:
        current = None
    if current != text:
        write_atomic(path, text)


ENV_RECORD = "kbtool-env.json"  # an env's install record (envs.RECORD), in the env's folder


def registered_python(env_dir: str) -> Optional[str]:
    """The existing interpreter `kbtool env use` registered for the env in `env_dir` (its record says "external"),
    or None: a venv kbtool built there, no env, or a record that cannot be read (envs.problem says why)."""
    try:
        with open(os.path.join(env_dir, ENV_RECORD), "rb") as fh:
            record = json.loads(fh.read(1 << 20).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    if isinstance(record, dict) and record.get("external") is True and isinstance(record.get("python"), str):
        return str(record["python"])
    return None


class Unavailable(Exception):
    """A backend cannot run here; the message says exactly why."""


@dataclass
class Launch:
    """Everything needed to start one worker process."""

    backend: str
    python: str
    module: str
    fallback_modules: List[str] = field(default_factory=list)
    shims: List[str] = field(default_factory=list)
    version_of: List[str] = field(default_factory=list)
    graph: str = "none"
    env: Dict[str, str] = field(default_factory=dict)
    extra_pythonpath: List[str] = field(default_factory=list)  # only for workers on the controller's Python
    # a module that does not read keras.json itself (the reference, a custom module): the worker applies the
    # file through the module's set_floatx/set_epsilon/set_image_data_format, as Keras's loader would
    apply_keras_json: bool = False
    # K.clear_session() before each case: keras 2.3.1 on TF1 adds every case's ops to one default graph, and each
    # session run gets slower as it grows (a whole spec took over 10 minutes); a fresh graph per case does not
    clear_session: bool = False
    # a backend's variants of a case (the same call with a transformed input), judged against the case's reference
    variants: Callable[[Any], List[Any]] = lambda case: []
    # at most this many of the pool's workers run this backend's cases at once (None: as many as there are slots)
    workers: Optional[int] = None
    # seconds a case takes on this backend, roughly (measured): the pool starts the longest backends first
    case_seconds: Optional[float] = None
    case_timeout: Optional[float] = None  # this backend's own default for --timeout (None: the client's)
    # environment variables of the worker that takes share i > 0 (e.g. a cache of its own, where a shared one locks)
    per_worker_env: Callable[[int], Dict[str, str]] = lambda index: {}
    # the modes this backend can run (a case's other modes are not run); each one it cannot, with the reason, is
    # reported once for the backend instead of as a failure per case
    modes: Tuple[str, ...] = MODES
    unsupported_modes: Dict[str, str] = field(default_factory=dict)
    # a custom module run in a managed env (`mod@tensorflow`): the env's built-in backend and its modules (public
    # first, then fallbacks); the worker imports them too and says which functions the module shares with them
    base_backend: Optional[str] = None
    base_modules: List[str] = field(default_factory=list)
    # the devices its engine can compute on (--device) -> the worker's extra environment variables there; empty: the
    # backend runs on the CPU only as kbtool runs it, its results carry no device and it gets no KBTOOL_DEVICE
    devices: Dict[str, Dict[str, str]] = field(default_factory=dict)
    cpu_only: str = ""  # why it has no devices, said when another device is asked (default: DEFAULT_CPU_ONLY)
    device: Optional[str] = None  # the device it runs on (on_device sets it; None: a backend without devices)
    # a release's pins (`tensorflow1[keras=2.2.4]`: {"keras": "2.2.4"}): a worker that reports other versions is
    # broken, never run under the release's name (WorkerClient.start)
    pins: Dict[str, str] = field(default_factory=dict)

    def for_worker(self, index: int) -> "Launch":
        """This launch for the worker that takes share `index` of the backend's cases."""
        if index == 0:
            return self
        import dataclasses

        return dataclasses.replace(self, env=dict(self.env, **self.per_worker_env(index)))

    def argv(self) -> List[str]:
        argv = [self.python, "-u", WORKER_MAIN, "--module", self.module, "--graph", self.graph]
        if self.apply_keras_json:
            argv.append("--apply-keras-json")
        if self.clear_session:
            argv.append("--clear-session")
        for module in self.fallback_modules:
            argv += ["--fallback-module", module]
        if self.base_backend:
            argv += ["--base-backend", self.base_backend]
            for module in self.base_modules:
                argv += ["--base-module", module]
        for shim in self.shims:
            argv += ["--shim", shim]
        for name in self.version_of:
            argv += ["--version-of", name]
        return argv

    def environ(self, keras_config: Optional[Mapping[str, Any]] = None) -> Dict[str, str]:
        """The worker's environment; its keras.json holds `keras_config` (the documented defaults when None)."""
        env = dict(os.environ)
        # The caller's KERAS_BACKEND / KERAS_HOME never reach a worker: only a recipe's own keras_backend (in
        # self.env) picks a Keras backend, and the worker's keras.json is the private one below.
        env.pop("KERAS_BACKEND", None)
        env.pop("KERAS_HOME", None)
        env.update(self.env)
        # Workers get their own keras.json so the user's file never changes what is checked.
        env["KERAS_HOME"] = keras_home_for(keras_config)
        paths = [p for p in self.extra_pythonpath + [os.environ.get("PYTHONPATH", "")] if p]
        if paths:
            env["PYTHONPATH"] = os.pathsep.join(paths)
        return env


DEFAULT_CPU_ONLY = "runs on the CPU only in kbtool (its recipe declares no devices)"


class DeviceUnsupported(Unavailable):
    """A backend cannot run on the device asked (--device): reported once for the backend, never per case."""


# The part of a device's memory kbtool shares out among the workers on it (the rest: the driver, other processes);
# each worker gets DEVICE_MEMORY / (the most workers alive on the device at once), whatever its backend.
DEVICE_MEMORY = 0.9
MEMORY_SHARE = "KBTOOL_DEVICE_MEMORY_SHARE"  # a worker's share of its device's memory, 0..1 (the keras3 port reads it)
# JAX's own variable for the same share: jaxlib's xla_client.generate_pjrt_gpu_plugin_options reads it when the GPU
# client is made. jax 0.10 also reads XLA_CLIENT_MEM_FRACTION (older releases only this one) and refuses both at once:
# where the caller set that one, it is left to rule
JAX_MEMORY_FRACTION = "XLA_PYTHON_CLIENT_MEM_FRACTION"
JAX_NEW_MEMORY_FRACTION = "XLA_CLIENT_MEM_FRACTION"


def on_device(
    launch: Launch, device: str = DEFAULT_DEVICE, precision: str = DEFAULT_PRECISION, jobs: Optional[int] = None
) -> Launch:
    """`launch` set up to run on `device` at `precision`: KBTOOL_DEVICE and KBTOOL_PRECISION and the device's own
    variables in its environment; on a GPU at most `jobs` workers (--jobs; None: DEFAULT_GPU_WORKERS, or fewer when
    there are fewer cores), within its own cap. A launch without devices is returned as it is on the CPU, and raises
    DeviceUnsupported (with its reason) on any other device. share_memory then gives each worker its share."""
    import dataclasses

    if not launch.devices:
        if device == DEFAULT_DEVICE:
            return launch
        raise DeviceUnsupported(f"{launch.cpu_only or DEFAULT_CPU_ONLY}; --device {device} does not apply to it")
    if device not in launch.devices:
        raise DeviceUnsupported(
            "has no {} device in kbtool (its devices: {})".format(device, ", ".join(sorted(launch.devices)))
        )
    env = dict(launch.env, KBTOOL_DEVICE=device, KBTOOL_PRECISION=precision, **launch.devices[device])
    workers = launch.workers
    if device != DEFAULT_DEVICE:
        from kbtool.runners.pool import default_jobs

        on_gpu = jobs or min(default_jobs(), DEFAULT_GPU_WORKERS)
        workers = min(workers, on_gpu) if workers else on_gpu
    return dataclasses.replace(launch, env=env, device=device, workers=workers)


def share_memory(launches: Sequence[Launch], jobs: Optional[int] = None) -> List[Launch]:
    """`launches` (already on_device) with each worker's share of its device's memory in its environment: on a GPU,
    DEVICE_MEMORY divided by the most workers alive on that device at once, over every backend on it (the sum of
    their caps, at most the run's `jobs` slots; None: one per core). No engine then takes more than its share
    (JAX preallocates 75 % of the memory unless told otherwise): JAX reads XLA_PYTHON_CLIENT_MEM_FRACTION, the
    keras3 port gives torch its share (torch.cuda.set_per_process_memory_fraction), TensorFlow grows its memory as
    it needs. A launch on the CPU, or without devices, is returned as it is."""
    import dataclasses
    import math

    from kbtool.runners.pool import default_jobs

    slots = jobs or default_jobs()
    on_devices: Dict[str, int] = {}
    for launch in launches:
        if launch.device and launch.device != DEFAULT_DEVICE:
            on_devices[launch.device] = on_devices.get(launch.device, 0) + (launch.workers or slots)
    shared = []
    for launch in launches:
        if not launch.device or launch.device == DEFAULT_DEVICE:
            shared.append(launch)
            continue
        # rounded down, so the shares never add up to more than DEVICE_MEMORY
        share = f"{math.floor(1000 * DEVICE_MEMORY / min(slots, on_devices[launch.device])) / 1000:.3f}"
        env = dict(launch.env, **{MEMORY_SHARE: share})
        if JAX_NEW_MEMORY_FRACTION not in os.environ and JAX_NEW_MEMORY_FRACTION not in env:
            env[JAX_MEMORY_FRACTION] = share
        shared.append(dataclasses.replace(launch, env=env))
    return shared
