"""The --kbtool-* options → what `kbtool check` with the same flags would run: the plan, the known differences.

Every bad value is a pytest.UsageError of one line (pytest prints `ERROR: kbtool: ...` and exits 4), as `kbtool check`
prints one line and exits 2.
"""

import math
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, List, Optional

import pytest

if TYPE_CHECKING:  # pragma: no cover
    from ..known import KnownEntry


@dataclass
class Selection:
    plan: object  # kbtool.plan.Plan
    entries: List[
        "KnownEntry"
    ]  # the spec's alias entries, then the known-differences file's (as check.run_check has them)
    case_timeout: Optional[float] = None
    settings_line: str = ""  # which keras.json settings the cases run under, and where they come from


def read(config):
    """The selection the options describe (a pytest.UsageError when one is wrong)."""
    from ..errors import KbtoolError

    try:
        return _read(config)
    except KbtoolError as exc:
        raise pytest.UsageError("kbtool: {}".format(" ".join(str(exc).split())))


def _read(config):
    from .. import keras_settings
    from ..check import known_entries_for
    from ..errors import KbtoolError
    from ..known import alias_entries
    from ..plan import make_plan
    from ..specs import loader

    get = config.getoption
    seed = _whole_number(get("kbtool_seed"), "--kbtool-seed")
    case_timeout = _seconds(get("kbtool_timeout"))
    here = str(config.invocation_params.dir)
    spec_path = _path(get("kbtool_spec"), here)
    known_path = _path(get("kbtool_known"), here)
    for flag, path in (("--kbtool-spec", spec_path), ("--kbtool-known", known_path)):
        if path and not os.path.isfile(path):
            raise KbtoolError(f"{flag} {path}: no such file")
    settings = keras_settings.resolve(get("kbtool_keras_config"))
    plan = make_plan(
        loader.load(spec_path),
        ops=get("kbtool_op"),
        backends=get("kbtool_backend"),
        case_patterns=get("kbtool_case"),
        modes=get("kbtool_mode"),
        examples=get("kbtool_examples"),
        seed=seed,
        grid=get("kbtool_grid"),
        keras_config=settings.override,
    )
    keras_settings.apply(plan, settings)
    entries, _ = known_entries_for(plan.spec, known_path)
    return Selection(
        plan=plan,
        entries=alias_entries(plan.spec) + list(entries),
        case_timeout=case_timeout,
        settings_line=settings.header(),
    )


def _path(value, here):
    return os.path.join(here, os.path.expanduser(value)) if value else None


def _whole_number(text, flag):
    from ..errors import KbtoolError

    try:
        return int(str(text).strip())
    except ValueError:
        raise KbtoolError(f"{flag} takes a whole number, not {text!r}")


def _seconds(text):
    """--kbtool-timeout as `kbtool check --timeout` takes it: more than 0, at most a day."""
    from ..errors import KbtoolError

    if text is None:
        return None
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and 0 < seconds <= 86400):
        raise KbtoolError(f"--kbtool-timeout takes a number of seconds, more than 0 and at most 86400 (got {text!r})")
    return seconds
