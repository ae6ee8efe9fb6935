"""The settings of one run: `RunSettings`, built once per command from its options and handed down as is.

A check (and the pytest plugin, a bisect probe, an exploration, a bench) carries one record from its command line
to the plan, the pool of worker slots, every backend session and every repro line: the seed, --repeat, --timeout,
--jobs, --device, --precision, --strict, the spec and known-differences files and the keras.json overrides. It is
frozen: a stage that needs another value makes another record (`dataclasses.replace`), it never edits the run's.

Ground floor: it imports only the words every layer shares.
"""

import os
from dataclasses import dataclass, replace
from typing import Any, Mapping, Optional, Tuple

from kbtool.vocabulary import DEFAULT_DEVICE, DEFAULT_PRECISION


@dataclass(frozen=True)
class RunSettings:
    """What one run carries, from its options. None where a value is not given: the default then applies (the
    shipped spec and known-differences files, each backend's own case timeout, one worker slot per core)."""

    seed: int = 0
    repeat: int = 1  # --repeat N: each case runs N times on its worker; runs that disagree are `nondeterministic`
    case_timeout: Optional[float] = None  # --timeout: seconds one case may take (None: each backend's own)
    jobs: Optional[int] = None  # --jobs: worker slots at once (None: one per core)
    device: str = DEFAULT_DEVICE  # --device: where the backends with devices compute
    precision: str = DEFAULT_PRECISION  # --precision: their engines' float32 setting
    strict: bool = False  # --strict: an unsupported result or a grown known difference fails the run too
    spec_path: Optional[str] = None  # --spec (None: the shipped spec)
    known_paths: Tuple[str, ...] = ()  # --known, each adding to the shipped file's entries, in order
    shipped_known: bool = True  # False with --no-shipped-known
    keras_config: Optional[Mapping[str, Any]] = None  # --keras-config KEY=VALUE: settings forced on every case
    keras_defaults: bool = False  # --keras-config defaults: keras.json's settings are ignored
    kbtool_home: Optional[str] = None  # $KBTOOL_HOME when set (a repro names it for a backend whose env lives there)

    def resolved(self, spec_path: Optional[str], environ: Optional[Mapping[str, str]] = None) -> "RunSettings":
        """These settings with the spec the run loaded (when --spec was not given) and $KBTOOL_HOME from `environ`
        (default: this process's) when not given: what every repro of the run says."""
        env = os.environ if environ is None else environ
        home = self.kbtool_home or env.get("KBTOOL_HOME") or None
        return replace(
            self,
            spec_path=self.spec_path or spec_path,
            kbtool_home=os.path.expanduser(home) if home else None,
        )


DEFAULTS = RunSettings()  # a run given no option: every default
