"""The JSON report of `kbtool models` (the source of truth every view reads): its one builder from a run's typed
records, its summary and verdict (computed, never read from a file), writing it (standard JSON, validated against
models.schema.json first) and reading it back (validated).

A report is {schema_version, kind: "models", kbtool, created, settings, oracle, engines, models, results, releases,
summary, wall_seconds[, incomplete][, cases]}. A result is one model on one engine: its verdict, the oracle it was
compared with, the forward and gradient differences, and where an inconsistency comes from (localisation)."""

import dataclasses
import datetime
import os
from typing import Any, Dict, List, Optional, Sequence

from kbtool import __version__, schemas
from kbtool.errors import KbtoolError
from kbtool.models.records import VERDICTS, Difference, Localisation, ModelResult
from kbtool.reports.report import clip, dumps, one_line, write_atomic
from kbtool.reports.text import plural

SCHEMA_VERSION = 1
KIND = "models"
SCHEMA_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models.schema.json")
# an engine that ran no model: why (the runners' BackendStatus words, and `unsupported`: it cannot run Keras models)
UNSUPPORTED = "unsupported"
RAN = "available"
# what a run ends with, for the exit code: explained (pass, known, unsupported), or not
EXPLAINED = ("pass", "known", "unsupported")
COMPARED = ("pass", "known", "unexplained")  # a verdict that compared the engine's outputs with an oracle

Record = Dict[str, Any]


@dataclasses.dataclass
class ModelsRun:
    """Everything one `kbtool models` produced, as typed records: what the report is assembled from."""

    settings: Record  # seed, train, timeout, jobs, device, versions, models and backends asked, emit_cases
    oracle: Optional[str]  # the engine that is the reference (None: no reference ran; majorities only)
    engines: List[Record]  # {name, status, reason?, versions?, seconds?, models?}
    models: List[Record]  # {name, family, about}: the zoo's models that ran
    results: List[ModelResult]
    wall_seconds: float = 0.0
    releases: List[Record] = dataclasses.field(default_factory=list)  # LEMON-style changes between releases
    incomplete: Optional[Record] = None  # {signal, note}: an interrupted run
    cases: Optional[Record] = None  # {path, written}: --emit-cases
    stale_known: List[Record] = dataclasses.field(default_factory=list)  # models/known.py stale_record


def difference_record(diff: Optional[Difference]) -> Optional[Record]:
    return None if diff is None else dataclasses.asdict(diff)


def localisation_record(where: Optional[Localisation]) -> Optional[Record]:
    if where is None:
        return None
    record = dataclasses.asdict(where)
    if isinstance(record.get("rate"), float):
        record["rate"] = round(record["rate"], 6)
    return {k: v for k, v in record.items() if v is not None and v != ""}


def result_record(result: ModelResult) -> Record:
    record: Record = {
        "model": result.model,
        "engine": result.engine,
        "verdict": result.verdict,
        "oracle": result.oracle,
        "seconds": round(float(result.seconds), 3),
    }
    oracle_engine = getattr(result, "oracle_engine", "")
    if oracle_engine:
        record["oracle_engine"] = oracle_engine
    if getattr(result, "gradient_oracle", ""):
        record["gradient_oracle"] = result.gradient_oracle
    if result.reason:
        record["reason"] = one_line(result.reason)
    for key, value in (
        ("forward", difference_record(result.forward)),
        ("gradient", difference_record(result.gradient)),
        ("localisation", localisation_record(result.localisation)),
    ):
        if value is not None:
            record[key] = value
    if result.known_model:
        record["known"] = {"id": result.known_model, "reason": one_line(result.known_reason)}
        if result.known_call:
            record["known"]["call"] = result.known_call
    return record


def summarize(report: Record) -> Record:
    """Counts per verdict and per engine, and the verdict: ok when the run was whole, compared something, and every
    result is explained (pass, known, unsupported)."""
    counts = dict.fromkeys(VERDICTS, 0)
    per_engine: Dict[str, Dict[str, int]] = {e["name"]: dict.fromkeys(VERDICTS, 0) for e in report["engines"]}
    for r in report["results"]:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
        per_engine.setdefault(r["engine"], dict.fromkeys(VERDICTS, 0))[r["verdict"]] += 1
    compared = sum(counts[v] for v in COMPARED)
    unexplained = sum(n for v, n in counts.items() if v not in EXPLAINED and v != "not_compared")
    could_not_start = [e["name"] for e in report["engines"] if e["status"] == "broken"]
    stale = len(report.get("stale_known", []))
    return {
        "counts": counts,
        "per_engine": per_engine,
        "results": len(report["results"]),
        "compared": compared,
        "unexplained": unexplained,
        "could_not_start": could_not_start,
        "stale": stale,
        "ok": compared > 0 and unexplained == 0 and not stale and not could_not_start and not report.get("incomplete"),
    }


def exit_code(report: Record) -> int:
    """As check's: 0 every result explained, 1 any unexplained (or an engine that could not start), 2 nothing
    compared (a run that compared nothing is never green)."""
    summary = summarize(report)
    if summary["compared"] == 0:
        return 2
    return 0 if summary["ok"] else 1


def reasons(report: Record) -> List[str]:
    """Why the run is not ok, one phrase each (empty when it is)."""
    summary = summarize(report)
    out = []
    if report.get("incomplete"):
        out.append("incomplete ({})".format(report["incomplete"].get("signal", "interrupted")))
    if summary["compared"] == 0:
        out.append("nothing compared: no model ran on an engine and an oracle")
    if summary["unexplained"]:
        out.append("{} unexplained".format(summary["unexplained"]))
    out += [f"{name} could not start" for name in summary["could_not_start"]]
    if summary.get("stale"):
        stale = plural(summary["stale"], "stale entry", "stale entries")
        out.append(f"{stale} in specs/known_models.yaml")
    return out


def assemble(run: ModelsRun) -> Record:
    """The run's JSON document, validated (a KbtoolError names the first problem: a bug, never the user's)."""
    report: Record = {
        "schema_version": SCHEMA_VERSION,
        "kind": KIND,
        "kbtool": __version__,
        "created": datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat(),
        "settings": run.settings,
        "oracle": run.oracle,
        "engines": run.engines,
        "models": run.models,
        "results": [result_record(r) for r in run.results],
        "releases": run.releases,
        "wall_seconds": round(run.wall_seconds, 3),
    }
    if run.incomplete:
        report["incomplete"] = run.incomplete
    if run.cases:
        report["cases"] = run.cases
    if run.stale_known:
        report["stale_known"] = run.stale_known
    report["summary"] = summarize(report)
    return report


def validate(report: Any) -> List[str]:
    """Problems of a models report against its schema, as 'path: message' strings (empty when valid)."""
    return schemas.problems(SCHEMA_FILE, report)


def _refuse_invalid(report: Any, where: str) -> None:
    problems = validate(report)
    if problems:
        more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
        raise KbtoolError(one_line(f"{where}: {clip(problems[0], 300)}{more}"))


def render_json(report: Record) -> str:
    """The report as standard JSON (non-finite numbers spelt "NaN", "Infinity"), validated before it is written."""
    import json

    text = dumps(report)
    _refuse_invalid(json.loads(text), "models report")
    return text


def write(report: Record, path: str) -> None:
    try:
        write_atomic(path, render_json(report))
    except OSError as exc:
        raise KbtoolError(f"cannot write {path}: {exc.strerror or exc}")


def load(path: str) -> Record:
    """A models report written by `kbtool models -o FILE.json`, validated; a one-line KbtoolError otherwise."""
    data = _read_any(path)
    if data.get("kind") != KIND:
        raise KbtoolError(
            f'{path}: not a models report (no kind "models"; write one with `kbtool models -o FILE.json`)'
        )
    _refuse_invalid(data, f"models report {path}")
    return data


def _read_any(path: str) -> Record:
    """The JSON of `path`, read within the check report's bounds (a regular UTF-8 file of at most 256 MB), not
    judged by the check report's schema."""
    import json

    from kbtool.reports.report import _parse_constant, _read

    try:
        data = json.loads(_read(path), parse_constant=_parse_constant)
    except ValueError as exc:
        raise KbtoolError(one_line(f"report {path}: not JSON ({clip(exc, 120)})"))
    if not isinstance(data, dict):
        raise KbtoolError(f"{path}: not a models report")
    return data


def engine_names(report: Record) -> List[str]:
    """The engines in report order."""
    return [e["name"] for e in report["engines"]]


def model_names(report: Record) -> List[str]:
    """The models in report order (those with results included even when the models list lacks them)."""
    names = [m["name"] for m in report["models"]]
    return names + [n for n in dict.fromkeys(r["model"] for r in report["results"]) if n not in names]


def cell_of(report: Record) -> Dict[Any, Record]:
    """(model, engine) -> its result."""
    return {(r["model"], r["engine"]): r for r in report["results"]}


def findings(report: Record, verdicts: Sequence[str] = ("unexplained", "error")) -> List[Record]:
    """The results with these verdicts, in model then engine order."""
    models, engines = model_names(report), engine_names(report)
    chosen = [r for r in report["results"] if r["verdict"] in verdicts]
    return sorted(
        chosen,
        key=lambda r: (
            models.index(r["model"]) if r["model"] in models else len(models),
            engines.index(r["engine"]) if r["engine"] in engines else len(engines),
        ),
    )


def finding_text(record: Record) -> str:
    """One finding: `model on engine: layer L -> K.fn(...)` (or why it has no layer or call)."""
    head = f"{record['model']} on {record['engine']}"
    where = record.get("localisation")
    if record["verdict"] == "error" or not where or (record.get("known") and not where.get("call")):
        known = f" [known: {record['known']['id']}]" if record.get("known") else ""
        call = f" -> {call_of(record)}" if call_of(record) else ""
        text = f": {record['reason']}" if record.get("reason") else ""
        return f"{head}: {record['verdict']}{call}{text}{known}"
    call = where.get("call_text") or (f"K.{where['call']}" if where.get("call") else "")
    tail = f" -> {call}" if call else f" (no K.* call named: {where.get('why_not') or 'not traced'})"
    known = f" [known: {explanation(record)}]" if explanation(record) else ""
    case = f" [case {where['case_id']}]" if where.get("case_id") else ""
    return f"{head}: layer {where['layer']} ({where.get('layer_class', '?')}){tail}{known}{case}"


def explanation(record: Record) -> str:
    """The id of what explains a known finding: the op-level known difference, else the known_models.yaml entry."""
    where = record.get("localisation") or {}
    return str(where.get("known_id") or (record.get("known") or {}).get("id") or "")


def call_of(record: Record) -> str:
    """The finding's K.* call as the views show it: the localiser's, else the one its known_models entry names."""
    where = record.get("localisation") or {}
    if where.get("call_text") or where.get("call"):
        return str(where.get("call_text") or f"K.{where['call']}")
    named = (record.get("known") or {}).get("call")
    return f"K.{named} (named by the entry)" if named else ""


def why_text(record: Record) -> str:
    """The views' "known / case / why" column: what explains the finding (a known_models.yaml entry with its reason),
    else its spec case, its reason or why no call was named."""
    where = record.get("localisation") or {}
    if record.get("known") and not where.get("known_id"):
        return f"{record['known']['id']}: {clip(record['known']['reason'], 200)}"
    return str(explanation(record) or where.get("case_id") or record.get("reason") or where.get("why_not") or "")
