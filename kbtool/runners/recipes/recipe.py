"""A recipe: how a built-in backend's environment is made (interpreter, pinned packages, system libraries) and how
a worker is started in it (module, shims, environment variables). The recipes themselves are data: keras2.py,
keras3.py and oracles.py, behind the lazy table in recipes/__init__.py."""

import os
import shlex
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

from kbtool.runners.base import ENV_RECORD, Launch, Unavailable, envs_dir, registered_python
from kbtool.runners.envs.interpreters import NoInterpreter, WrongInterpreter, find, hint
from kbtool.runners.names import Release
from kbtool.vocabulary import MODES


def _no_env_vars(env_dir: str) -> Dict[str, str]:
    return {}


def _no_problems() -> List[str]:
    return []


def _nothing_to_prepare(env_dir: str) -> None:
    return None


def _no_variants(case: Any) -> List[Any]:
    return []


def _no_worker_env(env_dir: str, index: int) -> Dict[str, str]:
    return {}


@dataclass
class Recipe:
    """A managed environment for one backend."""

    name: str
    python_version: str  # "3.11" or "3.6": the interpreter the env is built from
    packages: List[str]
    module: str
    keras_backend: Optional[str] = None  # value of KERAS_BACKEND for keras 2.3.1
    bootstrap_packages: List[str] = field(default_factory=list)  # installed first (e.g. an older pip)
    fallback_modules: List[str] = field(default_factory=list)
    shims: List[str] = field(default_factory=list)
    version_of: List[str] = field(default_factory=list)
    graph: str = "none"
    apt_packages: List[str] = field(default_factory=list)
    env_vars: Callable[[str], Dict[str, str]] = _no_env_vars
    system_check: Callable[[], List[str]] = _no_problems  # problems with system libraries
    prepare: Callable[[str], None] = _nothing_to_prepare  # after pip: symlinks, caches
    variants: Callable[[Any], List[Any]] = _no_variants  # see Launch.variants
    # the case-id suffix of each variant `variants` makes -> the ops it makes it for (kbtool.known reads this data: an
    # entry may name a variant's results by case glob and use the suffix as `verified_by`)
    variant_suffixes: Dict[str, Tuple[str, ...]] = field(default_factory=dict)
    workers: Optional[int] = None  # see Launch.workers
    case_seconds: Optional[float] = None  # see Launch.case_seconds
    clear_session: bool = False  # see Launch.clear_session
    case_timeout: Optional[float] = None  # see Launch.case_timeout
    per_worker_env: Callable[[str, int], Dict[str, str]] = _no_worker_env  # see Launch.per_worker_env
    env_name: Optional[str] = None  # another recipe's env this backend runs in (keras3 in tensorflow's); None: its own
    modes: Tuple[str, ...] = MODES  # the modes its cases run in; see Launch.modes
    unsupported_modes: Dict[str, str] = field(default_factory=dict)  # mode -> why it cannot run (said once)
    # `pip freeze` lines a wheel's metadata spells otherwise than its release (cntk 2.7.post2 says 2.7) -> lock line
    freeze_aliases: Dict[str, str] = field(default_factory=dict)
    notes: str = ""
    # a test oracle rather than an engine (keras-numpy): checked like any backend, never timed by `kbtool bench`
    oracle: bool = False
    # another package index some of its packages come from (PyTorch's CPU wheels): used when its host answers, since
    # pip retries an unreachable index for minutes per package
    extra_index: Optional[str] = None
    # the devices its engine computes on under kbtool (--device) -> the worker's extra environment variables there
    # (env_dir -> variables); empty for a backend that runs on the CPU only (the Keras 2 backends: tensorflow's
    # recipe hides the GPU with CUDA_VISIBLE_DEVICES=-1). See on_device.
    devices: Dict[str, Callable[[str], Dict[str, str]]] = field(default_factory=dict)
    cpu_only: str = ""  # why a backend without devices runs on the CPU only (said under --device gpu)
    # packages that follow another's release when a release pins it (tf-keras 2.16 needs tensorflow 2.16.*; tf-keras
    # 2.14 does not say so itself): pinned package -> its followers, pinned to the same major.minor (releases.py)
    release_couples: Dict[str, Tuple[str, ...]] = field(default_factory=dict)
    release: Optional[Release] = None  # a release backend's Release (None: the built-in recipe as it is)
    layered_on: Optional[str] = None  # a release's base env: its venv sees the base env's packages after its own

    @property
    def env_owner(self) -> str:
        """The name of the env this backend runs in (its own name unless it shares another recipe's)."""
        return self.env_name or self.name

    def env_dir(self) -> str:
        if self.release is not None:
            return os.path.join(envs_dir(), self.release.folder)
        return os.path.join(envs_dir(), self.env_owner)

    def env_python(self) -> str:
        """The env's interpreter: the one `kbtool env use` registered, else the venv's bin/python."""
        return registered_python(self.env_dir()) or os.path.join(self.env_dir(), "bin", "python")

    def worker_env(self, env_dir: str, external: bool = False) -> Dict[str, str]:
        """The environment variables a worker of this backend gets on top of the controller's. A venv kbtool built
        ignores the user's site-packages; a registered interpreter (`external`) is the user's and runs as it is."""
        env = {} if external else {"PYTHONNOUSERSITE": "1"}
        if self.keras_backend:
            env["KERAS_BACKEND"] = self.keras_backend
        env.update(self.env_vars(env_dir))
        return env

    def not_installed(self) -> str:
        """Why the backend cannot run when its env is not installed, and what to do: `kbtool env install NAME`, or,
        when no Python of the env's version is found here, which Python it needs and the ways to get one."""
        shared = "" if self.env_owner == self.name else f" (it runs in the {self.env_owner} env)"
        try:
            find(self.python_version, backend=self.name)
        except NoInterpreter:
            return f"not installed{shared}; {hint(self.python_version, self.name)}"
        except WrongInterpreter as exc:  # KBTOOL_PYTHON_X_Y names something else
            return f"not installed{shared}; {exc}"
        return f"not installed: run `kbtool env install {shlex.quote(self.name)}`{shared}"

    def launch(self) -> Launch:
        env_dir = self.env_dir()
        if not os.path.exists(os.path.join(env_dir, ENV_RECORD)):
            raise Unavailable(self.not_installed())
        external = registered_python(env_dir)
        return Launch(
            backend=self.name,
            python=external or self.env_python(),
            module=self.module,
            fallback_modules=list(self.fallback_modules),
            shims=list(self.shims),
            version_of=list(self.version_of),
            graph=self.graph,
            env=self.worker_env(env_dir, external=bool(external)),
            variants=self.variants,
            workers=self.workers,
            case_timeout=self.case_timeout,
            case_seconds=self.case_seconds,
            clear_session=self.clear_session,
            per_worker_env=lambda index: self.per_worker_env(env_dir, index),
            modes=tuple(self.modes),
            unsupported_modes=dict(self.unsupported_modes),
            devices={device: dict(variables(env_dir)) for device, variables in self.devices.items()},
            cpu_only=self.cpu_only,
            pins=dict(self.release.pins) if self.release is not None else {},
        )
