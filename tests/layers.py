"""kbtool's layers and rooms: the one table that tests/test_layering.py enforces and scripts/architecture.py writes
into docs/architecture.md.

Lowest layer first. A layer holds rooms; a room is a set of modules (a name stands for the module and everything
below it). Each kbtool module belongs to the room with the longest name that is it or a package above it, so a
product's `command.py` can sit in the commands layer while its logic sits lower. A module imports from its own room
and from rooms of lower layers: never up, never sideways into another room of its own layer.
"""

from typing import Dict, Tuple

Room = Tuple[str, Tuple[str, ...], str]  # (name, modules, what it is for)
Layer = Tuple[str, Tuple[Room, ...]]

LAYERS: Tuple[Layer, ...] = (
    (
        "ground",
        (
            (
                "core",
                (
                    "kbtool",
                    "kbtool.vocabulary",
                    "kbtool.errors",
                    "kbtool.paths",
                    "kbtool.files",
                    "kbtool.results",
                    "kbtool.capture",
                    "kbtool.schemas",
                    "kbtool.settings",
                ),
                "the words, records and file rules every layer shares",
            ),
            (
                "worker",
                ("kbtool.worker",),
                "the program that runs inside each backend's env (Python 3.6+); imports nothing of kbtool's",
            ),
        ),
    ),
    ("config", (("config", ("kbtool.config",), "keras.json: locate, read, validate, write"),)),
    ("specs", (("specs", ("kbtool.specs",), "the spec: parsed once, cases, domains, shapes, coverage"),)),
    ("verdicts", (("verdicts", ("kbtool.verdicts",), "judge(case, expected, actual): small pure functions"),)),
    ("reference", (("reference", ("kbtool.reference",), "the NumPy reference, a Keras backend of its own"),)),
    (
        "runners",
        (
            (
                "runners",
                ("kbtool.runners", "kbtool.repro"),
                "the backends wing: names, recipes, envs, releases, workers and the session that owns them",
            ),
        ),
    ),
    ("known", (("known", ("kbtool.known",), "known differences as data: entries, load, apply, record"),)),
    (
        "run",
        (
            (
                "run",
                ("kbtool.plan", "kbtool.shard", "kbtool.execute", "kbtool.keras_settings", "kbtool.interrupts"),
                "a run: the plan, its shards, the pool that executes it, keras.json for it, signals",
            ),
        ),
    ),
    ("reports", (("reports", ("kbtool.reports",), "the JSON report and one renderer per format; history"),)),
    ("check", (("check", ("kbtool.check", "kbtool.options"), "a check end to end; the options commands share"),)),
    (
        "models",
        (("models", ("kbtool.models",), "`kbtool models`: whole Keras models on every engine, traced to a K.* call"),),
    ),
    (
        "tools",
        (
            ("bench", ("kbtool.bench",), "`kbtool bench`: timing ops per backend"),
            ("explore", ("kbtool.explore",), "`kbtool explore`: Hypothesis searches of a backend"),
            ("pytest_plugin", ("kbtool.pytest_plugin",), "`pytest --kbtool`"),
            ("bisect", ("kbtool.bisect",), "`kbtool bisect`: the release where a result changed"),
        ),
    ),
    (
        "commands",
        (
            ("config command", ("kbtool.config.command",), "`kbtool config`"),
            ("spec command", ("kbtool.specs.command",), "`kbtool spec`"),
            ("env and backends commands", ("kbtool.runners.command",), "`kbtool env`, `kbtool backends`"),
            ("known command", ("kbtool.known.command",), "`kbtool known`"),
            ("report command", ("kbtool.reports.command",), "`kbtool report`"),
            ("check command", ("kbtool.check.command",), "`kbtool check`"),
            ("bench command", ("kbtool.bench.command",), "`kbtool bench`"),
            ("bisect command", ("kbtool.bisect.command",), "`kbtool bisect`"),
            ("models command", ("kbtool.models.command",), "`kbtool models`"),
            ("explore command", ("kbtool.explore.command",), "`kbtool explore`"),
            ("completion command", ("kbtool.completion",), "`kbtool completion`"),
        ),
    ),
    ("cli", (("cli", ("kbtool.cli", "kbtool.__main__"), "the group and its table of commands, loaded lazily"),)),
)

# rooms whose modules import nothing of kbtool's outside the room (the worker runs where kbtool is not installed)
SELF_CONTAINED = ("worker",)


def room_of(module: str) -> Tuple[int, str, str]:
    """(layer index, layer name, room name) of `module`; KeyError when no room holds it."""
    best = None
    for index, (layer, rooms) in enumerate(LAYERS):
        for room, names, _ in rooms:
            for name in names:
                inside = module == name or (name != "kbtool" and module.startswith(name + "."))
                if inside and (best is None or len(name) > best[0]):
                    best = (len(name), index, layer, room)
    if best is None:
        raise KeyError(module)
    return best[1], best[2], best[3]


def rooms() -> Dict[str, Tuple[str, ...]]:
    """{room name: its module names}."""
    return {room: names for _, group in LAYERS for room, names, _ in group}
