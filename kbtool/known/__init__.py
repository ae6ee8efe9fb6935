"""Known differences: recorded backend divergences, each with its reason, re-checked on every run.

An entry (specs/known_differences.yaml) targets results by op, case, backend, mode and status (each a glob or a
list of globs) and explains the targeted results whose message matches its regex. Here it is loaded and checked
(keys, types, regexes, and against the spec: the ops exist, the case globs name cases of those ops), applied
(the first entry that explains a result names it), counted, and aged: an entry that targets results in a run
that covers it, but explains none of them, no longer reproduces and is stale.

Entries are precise enough to gate on, or the file is refused: each lists its ops by name (no glob), narrows them
by a case glob other than '*' or a message regex, and names backends kbtool knows. `kbtool known record REPORT`
then makes them exact: it writes, per entry, `results` (the key and fingerprint, kbtool/known/fingerprint.py, of every
result it explained in that run) and `count`. A recorded entry explains those results alone, each only while its
fingerprint holds: a new failure never hides under an old reason, and a known failure that fails differently is
`changed` (unexplained) in any run, however filtered. An entry with `verified_by` (a variant's case-id suffix such
as Theano's '.kernel_flipped') explains, unrecorded, a result only where that variant of the same call passed, or
is explained by an entry without `verified_by` (a second cause of its own). Derived backends (a custom module
`pkg.mod@ENV`) inherit the entries of their base backend for the functions they share with it (`Result.inherits`).
A base backend's entries apply to its releases (`tensorflow1[keras=2.2.4]`, runners/releases.py: a glob is matched
against the base name, a bracketed name is a release named exactly), and `versions: {PKG: PEP 440 specifiers}` narrows
an entry to the backends whose versions are in range: the caller hands `apply` those its workers reported (and
reads the locks of backends that reported nothing, `lookup`); `apply` reads no file and imports no backend code.

The spec's Keras 1.x aliases bring their own entries: a Keras 2 backend that lacks the old name is explained by
the rename, and such an entry goes stale like any other once the backend has the name.

The file may be hostile: it is read within kbtool/files.py's limits (a regular file, 20 MB, bounded YAML), every
problem is one line quoting at most ~100 characters of it, and regexes run on the `regex` engine with a time
limit (1 s a search, 5 s for all the searches of one run): a search that times out does not match, and the result
says so in its note. A report's embedded entries (for `kbtool report merge`) are held to the same rules and limits.

The package, by job: `entry` (KnownEntry and the spec's alias entries), `load` (a file or a report's entries) and
`rules` (what an entry is held to), `apply` (mark, count, age), `globs` (how an entry names results, and the
backend-name grammar it needs), `regexes` (`match`, searched with a time limit), `versions` (the typed lookup of a
backend's package versions), `fingerprint` and `record` (`kbtool known record`). Callers use the names below.
"""

from kbtool.known.apply import Applied as Applied
from kbtool.known.apply import apply as apply
from kbtool.known.apply import covers as covers
from kbtool.known.apply import explains as explains
from kbtool.known.apply import judged as judged
from kbtool.known.apply import recorded_key as recorded_key
from kbtool.known.apply import targets as targets
from kbtool.known.entry import KERAS2_BACKENDS as KERAS2_BACKENDS
from kbtool.known.entry import KnownEntry as KnownEntry
from kbtool.known.entry import KnownSource as KnownSource
from kbtool.known.entry import alias_entries as alias_entries
from kbtool.known.entry import entry_of as entry_of
from kbtool.known.entry import numbered as numbered
from kbtool.known.globs import Globs as Globs
from kbtool.known.globs import backend_matches as backend_matches
from kbtool.known.globs import backend_of as backend_of
from kbtool.known.globs import device_of as device_of
from kbtool.known.globs import matches as matches
from kbtool.known.globs import result_key as result_key
from kbtool.known.layers import SHIPPED as SHIPPED
from kbtool.known.layers import KnownFiles as KnownFiles
from kbtool.known.layers import load_layers as load_layers
from kbtool.known.load import from_report as from_report
from kbtool.known.load import load as load
from kbtool.known.regexes import regex_problem as regex_problem
from kbtool.known.regexes import search as search
from kbtool.known.rules import known_backend as known_backend
from kbtool.known.rules import release_problem as release_problem
from kbtool.known.rules import validate as validate
from kbtool.known.rules import variant_suffixes as variant_suffixes
from kbtool.known.versions import BackendVersions as BackendVersions
from kbtool.known.versions import Versions as Versions
from kbtool.known.versions import from_locks as from_locks
from kbtool.known.versions import locked_versions as locked_versions
from kbtool.known.versions import lookup as lookup
from kbtool.known.versions import reported_versions as reported_versions
from kbtool.known.versions import satisfies as satisfies
from kbtool.known.versions import versions_of as versions_of
