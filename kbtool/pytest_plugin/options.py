"""The --kbtool-* options → what `kbtool check` with the same flags would run: the plan, the known differences.

Every bad value is a pytest.UsageError of one line (pytest prints `ERROR: kbtool: ...` and exits 4), as `kbtool check`
prints one line and exits 2.
"""

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, List, Optional

import pytest

if TYPE_CHECKING:
    from kbtool.known import KnownEntry
    from kbtool.plan import Plan
    from kbtool.settings import RunSettings


@dataclass
class PluginRun:
    """What the --kbtool-* options chose: the plan, the entries that judge it, the run's settings."""

    plan: "Plan"
    # the spec's alias entries, then the known-differences files' (as check.run_check has them)
    entries: List["KnownEntry"]
    settings: "RunSettings"  # the run's (seed, --kbtool-timeout, --kbtool-repeat, ...): every repro's
    settings_line: str = ""  # which keras.json settings the cases run under, and where they come from


def read(config: pytest.Config) -> PluginRun:
    """The selection the options describe (a pytest.UsageError when one is wrong)."""
    from kbtool.errors import KbtoolError

    try:
        return _read(config)
    except KbtoolError as exc:
        raise pytest.UsageError("kbtool: {}".format(" ".join(str(exc).split())))


def _read(config: pytest.Config) -> PluginRun:
    from kbtool import keras_settings, options
    from kbtool.check.run import known_entries_for, known_files_of
    from kbtool.known import alias_entries
    from kbtool.plan import Selection as Chosen
    from kbtool.plan import make_plan
    from kbtool.settings import RunSettings
    from kbtool.specs import loader

    get = config.getoption
    seed = _whole_number(get("kbtool_seed"), "--kbtool-seed")
    case_timeout = options.seconds(get("kbtool_timeout"), "--kbtool-timeout")
    repeat = options.repeat_count(get("kbtool_repeat"), "--kbtool-repeat")
    here = str(config.invocation_params.dir)
    spec_path = options.existing_file(_path(get("kbtool_spec"), here), "--kbtool-spec")
    known_paths = tuple(options.existing_file(_path(p, here), "--kbtool-known") or p for p in get("kbtool_known") or [])
    settings = keras_settings.resolve(get("kbtool_keras_config"))
    run = RunSettings(
        seed=seed,
        repeat=repeat,
        case_timeout=case_timeout,
        device=options.device(get("kbtool_device"), "--kbtool-device"),
        precision=options.precision(get("kbtool_precision"), "--kbtool-precision"),
        known_paths=known_paths,
        shipped_known=not get("kbtool_no_shipped_known"),
        keras_config=settings.override,
        keras_defaults=settings.pinned_defaults,
    )
    chosen = Chosen(
        ops=get("kbtool_op"),
        backends=get("kbtool_backend"),
        case_patterns=get("kbtool_case"),
        modes=get("kbtool_mode"),
        examples=get("kbtool_examples"),
        grid=get("kbtool_grid"),
    )
    plan = make_plan(loader.load(spec_path), chosen, run)
    keras_settings.apply(plan, settings)
    entries = known_entries_for(plan.spec, known_files_of(run))
    return PluginRun(
        plan=plan,
        entries=alias_entries(plan.spec) + list(entries),
        settings_line=settings.header(),
        settings=run.resolved(plan.spec.path),
    )


def _path(value: Optional[str], here: str) -> Optional[str]:
    return os.path.join(here, os.path.expanduser(value)) if value else None


def _whole_number(text: object, flag: str) -> int:
    from kbtool.errors import KbtoolError

    try:
        return int(str(text).strip())
    except ValueError:
        raise KbtoolError(f"{flag} takes a whole number, not {text!r}")
