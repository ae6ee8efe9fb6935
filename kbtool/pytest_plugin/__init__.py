"""`pytest --kbtool`: kbtool's conformance run as pytest items (a `pytest11` plugin).

One item per op × case × backend × mode (and per backend variant, e.g. Theano's `.kernel_flipped`), judged exactly
as `kbtool check` judges: the same plan (kbtool/plan.py), the same backend sessions and reference (kbtool/runners/session.py), the same
known differences (kbtool/known/). A known difference is an xfail with its reason; anything else that does not pass
fails with the message, the numbers and the command that reproduces it; a known difference that no longer
reproduces fails the session (see hooks.py).

Without `--kbtool` the plugin only adds its options: nothing of kbtool (numpy, the spec, the backends) is imported.

    options.py   the --kbtool-* options → the plan and the known differences (bad input: one-line UsageError)
    items.py     the collection: readable, -k-selectable, unique ids; one xdist group per backend worker
    runner.py    per process: one backend session per backend worker share, one reference, cached results
    verdict.py   one result's known difference, the unexpected pass, the failure text
    hooks.py     the hooks of an active run: collect, judge stale entries over every result, summary, cleanup
"""

from typing import Generator, Union

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kbtool", "kbtool conformance run (pytest --kbtool)")
    _add_selection_options(group)
    _add_run_options(group)


def _add_selection_options(group: pytest.OptionGroup) -> None:
    """What is collected: the items, the spec and known differences they come from."""
    group.addoption(
        "--kbtool",
        action="store_true",
        default=False,
        help="Add kbtool's conformance items to what pytest collects (the paths given, testpaths, or the "
        "current directory): one per op x case x backend x mode.",
    )
    group.addoption(
        "--kbtool-only",
        action="store_true",
        default=False,
        help="With --kbtool and no path argument: collect kbtool's items alone, not testpaths or the current "
        "directory.",
    )
    group.addoption(
        "--kbtool-op",
        action="append",
        default=[],
        metavar="OP",
        help="Only this op (repeatable; default: every op with cases).",
    )
    group.addoption(
        "--kbtool-backend",
        action="append",
        default=[],
        metavar="BACKEND",
        help="Backend (repeatable): numpy, tensorflow, theano, cntk, or a module path [@ENV]. Default: "
        "every built-in backend (one skipped item for each that is not installed).",
    )
    group.addoption(
        "--kbtool-case",
        action="append",
        default=[],
        metavar="GLOB",
        help="Only cases whose id matches this glob (repeatable).",
    )
    group.addoption(
        "--kbtool-mode",
        action="append",
        default=[],
        metavar="MODE",
        help="Only this evaluation mode: eager or symbolic (repeatable).",
    )
    group.addoption("--kbtool-examples", action="store_true", default=False, help="Only the documented examples.")
    group.addoption("--kbtool-seed", default="0", metavar="N", help="Seed for generated inputs (default 0).")
    group.addoption("--kbtool-spec", default=None, metavar="FILE", help="Spec file (default: the shipped one).")
    group.addoption(
        "--kbtool-known",
        action="append",
        default=[],
        metavar="FILE",
        help="A known-differences file whose entries add to the shipped file's (repeatable, applied in order).",
    )
    group.addoption(
        "--kbtool-no-shipped-known",
        action="store_true",
        default=False,
        help="Apply only the --kbtool-known files, not kbtool's shipped known differences.",
    )
    group.addoption(
        "--kbtool-grid",
        default="pairwise",
        metavar="GRID",
        help="Cases from the parameters' documented domains: pairwise (default) or full.",
    )


def _add_run_options(group: pytest.OptionGroup) -> None:
    """How each item runs: keras.json settings, device, precision, timeout, repeats."""
    group.addoption(
        "--kbtool-keras-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Run every case under this keras.json setting (repeatable; `defaults` ignores keras.json).",
    )
    group.addoption(
        "--kbtool-device",
        default=None,
        metavar="DEVICE",
        help="Where the backends with devices compute: cpu (default) or gpu; a backend that runs on the CPU only "
        "is one skipped item on gpu.",
    )
    group.addoption(
        "--kbtool-precision",
        default=None,
        metavar="PRECISION",
        help="Float32 precision of the backends with devices: default (the engine's) or highest.",
    )
    group.addoption(
        "--kbtool-timeout",
        default=None,
        metavar="SECONDS",
        help="Seconds one case may take before its worker is killed (default: the backend's own).",
    )
    group.addoption(
        "--kbtool-repeat",
        default=None,
        metavar="N",
        help="Run each case N times on its worker (default 1): runs that disagree bit for bit fail the item as "
        "nondeterministic. Random ops are not repeated (their draws differ by design).",
    )


@pytest.hookimpl(wrapper=True)
def pytest_cmdline_main(
    config: pytest.Config,
) -> Generator[None, Union[int, pytest.ExitCode], Union[int, pytest.ExitCode]]:
    """Under pytest-xdist (-n N) without a --dist of the user's, items go to workers by backend (--dist loadgroup
    and an xdist_group mark per backend worker): each backend's worker process is started once, not per item.
    A wrapper, so it runs before xdist's own tryfirst hook (which turns "no" into "load") whatever order the two
    plugins were registered in."""
    option = config.option
    if (
        getattr(option, "kbtool", False)
        and getattr(option, "numprocesses", None)
        and getattr(option, "dist", None) == "no"
    ):
        option.dist = "loadgroup"
    return (yield)


def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("kbtool"):
        if config.getoption("kbtool_only"):  # else the user's tests alone ran, green, and kbtool checked nothing
            raise pytest.UsageError("kbtool: --kbtool-only needs --kbtool (pytest --kbtool --kbtool-only)")
        return  # inert: nothing of kbtool is imported
    from kbtool.pytest_plugin.hooks import KbtoolHooks

    config.pluginmanager.register(KbtoolHooks(config), "kbtool-session")
