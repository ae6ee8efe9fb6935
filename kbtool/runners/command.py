"""`kbtool backends`: each backend's status, interpreter and versions (the probes are the session's, kept by
probe_cache)."""

import json
import os
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

import click

from kbtool.completion import complete_backend
from kbtool.errors import KbtoolError


@click.command()
@click.option(
    "--json", "as_json", is_flag=True, help="Print a JSON list: each backend's status, versions, reason and `cached`."
)
@click.option(
    "--backend",
    "names",
    multiple=True,
    help="Also probe a custom backend module (repeatable).",
    shell_complete=complete_backend,
)
@click.option("--refresh", is_flag=True, help="Start every backend's worker again instead of reusing kept answers.")
def backends(as_json: bool, names: Tuple[str, ...], refresh: bool) -> None:
    """Show each backend's status, interpreter and versions.

    Says why a backend is unavailable; * marks the active backend (keras.json's, or KERAS_BACKEND's).

    An available backend's answer is kept (KBTOOL_HOME/probes.json) and reused while its env, interpreter and
    packages are unchanged, so a second call answers within a second; --refresh starts each worker again.
    Installed releases (`tensorflow1[keras=2.2.4]`) are counted per base, not probed: --backend NAME probes one.

    \b
    Examples:
      kbtool backends
      kbtool backends --refresh --json
      kbtool backends --backend my_package.my_module
      kbtool backends --backend 'tensorflow1[keras=2.2.4]'
    """
    from kbtool.interrupts import Interrupted, Interrupts
    from kbtool.runners.base import envs_dir
    from kbtool.runners.probe_cache import ProbeCache, probe_all, wanted_backends
    from kbtool.runners.session import Cancel, probe

    envs_dir()  # a KBTOOL_HOME or envs folder that is not a folder: one line, before any worker starts
    cache = ProbeCache()
    active, active_from = _active_backend()
    wanted = wanted_backends(names)
    cancel = Cancel()
    status = _StatusLine(live=not as_json and sys.stderr.isatty() and os.environ.get("TERM") != "dumb")
    try:
        with Interrupts(cancel, "no backend is reported", raise_in_main=True):
            pending = probe_all(wanted, cache, cancel, probe, refresh=refresh)
            infos = _gather(pending, wanted, active, active_from, as_json, status)
    except Interrupted as stop:
        if status.shown:
            status("")
        sys.exit(128 + stop.signum)
    problem = cache.save()
    if problem:
        click.echo(f"kbtool: warning: {problem} (answers were not kept for next time)", err=True)
    if as_json:
        click.echo(json.dumps(infos, indent=2))
        return
    kept = sum(1 for info in infos if info.get("cached"))
    if kept:
        click.echo(f"{kept} of {len(infos)} answers kept from earlier runs (envs unchanged); --refresh asks again")
    said = _releases_line(wanted)
    if said:
        click.echo(said)


class _StatusLine:
    """The one line on a live stderr that says which workers are still starting (rewritten in place)."""

    def __init__(self, live: bool) -> None:
        self.live = live
        self.shown = False

    def __call__(self, text: str) -> None:
        if self.live:
            sys.stderr.write("\r\x1b[K" + text[: _width() - 1])
            sys.stderr.flush()
            self.shown = bool(text)


def _gather(
    pending: List[Tuple[str, Any]],
    wanted: List[str],
    active: Optional[str],
    active_from: str,
    as_json: bool,
    status: _StatusLine,
) -> List[Dict[str, Any]]:
    """Each backend's answer in order as its probe finishes, its row printed then (unless --json)."""
    started = time.monotonic()
    name_w = max([len("backend")] + [len(n) for n in wanted])
    if not as_json:
        click.echo(_backends_legend(active, active_from, wanted))
        click.echo("  {:<{w}} {:<13} {:<8} {}".format("backend", "status", "python", "versions, or why not", w=name_w))
    infos, told = [], False
    for index, (name, future) in enumerate(pending):
        while True:
            try:
                info: Dict[str, Any] = future.result(timeout=0.25)
                break
            except TimeoutError:
                waiting = [n for n, f in pending[index:] if not f.done()]
                if not status.live and not told and not as_json:
                    told = True
                    click.echo(f"kbtool: starting {len(waiting)} backends' workers (up to ~20 s)...", err=True)
                status(
                    "starting {} of {} workers ({}) {:.0f} s".format(
                        len(waiting), len(wanted), ", ".join(waiting), time.monotonic() - started
                    )
                )
        info["active"] = name == active
        infos.append(info)
        if not as_json:
            status("")
            for line in _backend_rows(info, name_w):
                click.echo(line)
    status("")
    return infos


def _releases_line(wanted: List[str]) -> Optional[str]:
    """The installed releases `kbtool backends` did not probe, counted per base (a worker each would take minutes)."""
    import collections
    import textwrap

    from kbtool.runners import releases

    counts = collections.Counter(r.base for r in releases.installed() if r.name not in wanted)
    if not counts:
        return None
    text = "installed releases, not probed: {} (`kbtool env list` names them; --backend NAME probes one)".format(
        ", ".join(f"{base} ×{count}" for base, count in counts.items())
    )
    return textwrap.fill(text, width=max(40, _width() - 1), break_on_hyphens=False, subsequent_indent="  ")


def _width() -> int:
    import shutil

    return shutil.get_terminal_size((80, 24)).columns


def _active_backend() -> Tuple[Optional[str], str]:
    """(the active backend's name, where it is set) from keras.json or KERAS_BACKEND; (None, why) when unreadable."""
    from kbtool.config import keras_json as config

    try:
        setting = config.effective()["backend"]
    except KbtoolError as exc:
        return None, f"keras.json cannot be read: {exc}"
    source = "KERAS_BACKEND" if setting.source.startswith("environment") else "keras.json"
    if not setting.source.startswith(("environment", "file")):
        source = "the documented default: no keras.json"
    return str(setting.value), source


def _backends_legend(active: Optional[str], active_from: str, wanted: List[str]) -> str:
    if active is None:
        return f"active backend unknown ({active_from})"[: _width()]
    if active in wanted:
        return f"* = the active backend, {active} ({active_from})"
    return f"active backend: {active} ({active_from}), not among these"


def _backend_rows(info: Dict[str, Any], name_w: int) -> List[str]:
    """A backend's row, its detail wrapped under its own column so that no line is wider than the terminal."""
    import textwrap

    detail = ", ".join(f"{k} {v}" for k, v in (info.get("versions") or {}).items()) or info.get("reason", "")
    head = "{} {:<{w}} {:<13} {:<8} ".format(
        "*" if info.get("active") else " ", info["name"], info["status"], info.get("python") or "-", w=name_w
    )
    room = max(20, _width() - len(head))
    lines = textwrap.wrap(detail, room, break_on_hyphens=bool(info.get("versions"))) or [""]
    return [(head + lines[0]).rstrip()] + [" " * len(head) + line for line in lines[1:]]
