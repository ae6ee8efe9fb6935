"""What the user's keras.json means for a check: the active backend, and the settings every case runs under.

Keras reads `backend`, `floatx`, `epsilon` and `image_data_format` from keras.json (KERAS_BACKEND overrides the
backend). A check honours them the same way:

- the configured backend is the user's *active* backend: it comes first in every view and `--active` checks it alone;
- floatx, epsilon and image_data_format apply to every case (a setting equal to its documented default changes
  nothing, so such a run is a default run and its known differences are judged as usual);
- `--keras-config KEY=VALUE` overrides one setting; `--keras-config defaults` ignores the file's settings (the
  documented defaults: what CI should pin). The active backend is still read then: it changes no verdict.
"""

import math
import os
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Protocol, TypeVar

from kbtool.config import keras_json as config
from kbtool.errors import KbtoolError
from kbtool.specs.domains import DomainError, parse_override
from kbtool.vocabulary import CASE_DEFAULTS, CASE_KEYS

DEFAULTS_WORD = "defaults"


@dataclass
class CheckSettings:
    """The settings a check runs under and where each one comes from."""

    override: Dict[str, object] = field(default_factory=dict)  # forced on every case (plan.keras_config)
    values: Dict[str, object] = field(default_factory=dict)  # every setting's value (the defaults filled in)
    sources: Dict[str, str] = field(default_factory=dict)  # setting -> where its value comes from
    active_backend: Optional[str] = None
    config_file: Optional[str] = None
    pinned_defaults: bool = False  # `--keras-config defaults`: keras.json's settings were ignored

    def header(self) -> str:
        """One line saying which settings ran and where they came from."""
        parts = (
            ["backend {} (active; {})".format(self.active_backend, self.sources["backend"])]
            if self.active_backend
            else []
        )
        for key in CASE_KEYS:
            parts.append(f"{key} {self.values[key]} ({self.sources[key]})")
        return "keras.json settings: " + ", ".join(parts)

    def as_report(self) -> Dict[str, Any]:
        return {"values": dict(self.values), "source": dict(self.sources), "file": self.config_file}


def resolve(
    items: Iterable[str] = (), environ: Optional[Mapping[str, str]] = None, path: Optional[str] = None
) -> CheckSettings:
    """The check's settings from keras.json, KERAS_BACKEND and `--keras-config` items (KEY=VALUE or `defaults`).

    A keras.json kbtool cannot read, or a setting Keras would refuse, is a one-line error that names the way out."""
    items = list(items)
    pin_defaults = DEFAULTS_WORD in items
    items = [item for item in items if item != DEFAULTS_WORD]
    try:
        cli = parse_override(items)
    except DomainError as exc:
        raise KbtoolError(f"{exc} (or `--keras-config defaults`)")
    path = path or config.config_path(environ)
    out = CheckSettings(config_file=path, pinned_defaults=pin_defaults)
    try:
        effective = config.effective(path=path, environ=environ)
    except KbtoolError as exc:
        if not pin_defaults:
            raise KbtoolError(f"{exc}; or pass --keras-config defaults to check without it")
        # pinned defaults need nothing from the file; the active backend is then KERAS_BACKEND's, if set
        effective = config.effective(path=os.devnull + ".absent", environ=environ)
        out.config_file = None
    backend = effective["backend"]
    problem = config.check_value("backend", backend.value)
    if problem:
        raise KbtoolError(
            "{} ({}): {}; fix it, or pass --backend to name what to check".format(
                path if backend.source == "file" else "KERAS_BACKEND", "backend", problem
            )
        )
    out.active_backend = backend.value
    out.sources["backend"] = _source(backend.source, path)
    for key in CASE_KEYS:
        default = CASE_DEFAULTS[key]
        if key in cli:
            out.values[key], out.sources[key] = cli[key], "--keras-config"
            out.override[key] = cli[key]
            continue
        setting = effective[key]
        if pin_defaults or not setting.source.startswith("file"):
            out.values[key] = default
            out.sources[key] = "--keras-config defaults" if pin_defaults else "documented default"
            continue
        problem = config.check_value(key, setting.value)
        if problem:
            raise KbtoolError(f"{path}: {problem}; fix it (`kbtool config set`), or pass --keras-config defaults")
        value = float(setting.value) if key == "epsilon" else setting.value
        out.values[key] = value
        if _same(key, value, default):
            out.sources[key] = "keras.json, the documented default"
        else:
            out.sources[key] = "keras.json"
            out.override[key] = value
    return out


def _same(key: str, value: Any, default: Any) -> bool:
    if key == "epsilon":
        return math.isclose(float(value), float(default), rel_tol=1e-9)  # 1e-7 spelt 1.0e-07: the same
    return bool(value == default)


def _source(source: str, path: Optional[str]) -> str:
    if source.startswith("environment"):
        return "KERAS_BACKEND"
    if source.startswith("file"):
        return "keras.json"
    return "documented default: no keras.json" if "no file" in source else "documented default"


class _Planned(Protocol):
    """What `apply` needs of a plan (plan.Plan), said here so that this module does not import the plan's."""

    settings: Optional[CheckSettings]
    active_backend: Optional[str]
    backends: List[Any]  # each has a `name`


Planned = TypeVar("Planned", bound=_Planned)


def apply(plan: Planned, settings: CheckSettings) -> Planned:
    """Record the settings on the plan and put the active backend first (every view follows the plan's order)."""
    plan.settings, plan.active_backend = settings, settings.active_backend
    # stable: the others keep their order
    plan.backends.sort(key=lambda planned: planned.name != settings.active_backend)
    return plan
