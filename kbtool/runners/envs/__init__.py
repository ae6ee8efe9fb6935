"""Backend environments, by job: build.py installs one from its recipe (venv + pip, checked against its lock,
recorded in kbtool-env.json), layered.py layers a release's env on its base env, register.py registers an existing
interpreter (`kbtool env use`), state.py says what an env is in and removes it, record.py reads records and locks,
pip.py runs pip, interpreters.py finds the Python an env is built from.

The names callers use are handed on here (`envs.install_all`, `envs.RECORD`, ...)."""

from kbtool.runners.envs.build import MissingInterpreter as MissingInterpreter
from kbtool.runners.envs.build import find_interpreter as find_interpreter
from kbtool.runners.envs.build import install as install
from kbtool.runners.envs.build import install_all as install_all
from kbtool.runners.envs.build import registered_line as registered_line
from kbtool.runners.envs.pip import conflict as conflict
from kbtool.runners.envs.pip import live_terminal as live_terminal
from kbtool.runners.envs.pip import pip_environ as pip_environ
from kbtool.runners.envs.record import LOCKS_DIR as LOCKS_DIR
from kbtool.runners.envs.record import MARKER as MARKER
from kbtool.runners.envs.record import RECORD as RECORD
from kbtool.runners.envs.record import lock_drift as lock_drift
from kbtool.runners.envs.record import lock_path as lock_path
from kbtool.runners.envs.record import read_lock as read_lock
from kbtool.runners.envs.register import use as use
from kbtool.runners.envs.state import describe as describe
from kbtool.runners.envs.state import problem as problem
from kbtool.runners.envs.state import remove as remove
