"""`kbtool check --backend B --versions PKG=LO..HI`: a check of every release of PKG in a range.

Each named built-in backend whose env has PKG is replaced, where it stands in the backend list, by its releases
in the range (releases.expand: every release the package index has from LO to HI, in version order); a backend
without PKG (another engine, a custom module, a release already pinned) stays as named. The releases not installed
yet are installed first, one at a time, each said on stderr with its time; one that fails to install is a backend
that did not run (broken, with the reason), never the end of the check.
"""

import os
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

from kbtool.errors import KbtoolError


def expand_backends(names: Sequence[str], text: str, runner: Any = None) -> List[str]:
    """`names` with each built-in backend whose env has the package of `text` (`PKG=LO..HI`) replaced by its
    releases in that range, oldest first; duplicates said once. A KbtoolError (one line) when none has it, or when
    the range is malformed or not on the index."""
    from kbtool.runners import releases
    from kbtool.runners.registry import RECIPES

    package, _, _ = releases.parse_range(text)
    expanded: List[str] = []
    swept = []
    for name in names:
        if name in RECIPES and package in releases.packages_of(RECIPES[name]):
            swept.append(name)
            expanded.extend(r.name for r in releases.expand(name, text, runner=runner))
        else:
            expanded.append(name)
    if not swept:
        raise KbtoolError(
            "--versions {}: no backend named has {} in its env ({}); name a built-in backend that installs it, "
            "e.g. --backend tensorflow1 --versions keras=2.2.4..2.3.1".format(text.strip(), package, ", ".join(names))
        )
    return list(dict.fromkeys(expanded))


def is_installed(name: str) -> bool:
    from kbtool.runners import envs, releases

    return os.path.exists(os.path.join(releases.recipe_for(name).env_dir(), envs.RECORD))


def install_missing(
    names: Sequence[str],
    say: Callable[[str], None],
    install: Optional[Callable[[Any], Optional[str]]] = None,
) -> Dict[str, str]:
    """Install each release of `names` that is not installed yet, in order; returns {name: why} for those that
    failed. `say` gets a progress line per release ("installing 2 of 5 releases: ...") and what came of it, with
    its time. `install(recipe)` (tests) installs one release and returns the error, None when it worked."""
    from kbtool.runners import releases

    missing = [n for n in names if releases.is_release(n) and not is_installed(n)]
    failed: Dict[str, str] = {}
    for i, name in enumerate(missing, 1):
        say(f"kbtool: installing {i} of {len(missing)} releases: {name}")
        start = time.monotonic()
        try:
            error = (install or _install)(releases.recipe_for(name))
        except KbtoolError as exc:
            error = str(exc)
        seconds = time.monotonic() - start
        if error is None:
            say(f"kbtool: installed {name} in {seconds:.1f} s")
        else:
            failed[name] = f"could not be installed: {error}"
            say(f"kbtool: {name} could not be installed ({seconds:.1f} s): {error}")
    return failed


def _install(recipe: Any) -> Optional[str]:
    """envs.install_all for one release, pip's progress kept; the error it said when it failed."""
    from kbtool.runners import envs

    said: List[str] = []
    failed = envs.install_all([recipe], False, out=said.append, err=said.append)
    if not failed:
        return None
    errors = [line[len("kbtool: error: ") :] for line in said if line.startswith("kbtool: error: ")]
    return errors[-1] if errors else (said[-1].strip() if said else "the install failed")
