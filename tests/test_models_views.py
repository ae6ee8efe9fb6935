"""The views of a models report, from synthetic ModelResults (no backend): the terminal matrix never wider than 80
columns, the findings as `model on engine: layer L -> K.fn(...)`, Markdown, HTML and JUnit."""

import io
import xml.etree.ElementTree as ET

from rich.console import Console
from rich.text import Text

from kbtool.models import output, report
from kbtool.models.records import Difference, Localisation, ModelResult
from kbtool.models.terminal import codes

ENGINES = [
    "numpy", "tensorflow", "tensorflow1", "theano", "cntk", "mxnet", "plaidml", "keras3", "keras-numpy",
    "keras3-jax", "keras3-torch", "keras3-tensorflow", "keras3-numpy", "keras3-openvino",
    "my_pkg.my_backend@tensorflow", "tensorflow1[keras=2.2.4]",
]  # fmt: skip
MODELS = ["mlp", "small_cnn", "a_model_with_a_name_far_longer_than_a_column"]
FAR = Difference(0.5, float("inf"), 0.1, 1e-3, True)
LONG_CALL = "K.conv2d(x[2,12,12,3] float32 in [-2.1, 2.3], kernel[3,3,3,8] float32, strides=(1, 1), padding='same', data_format='channels_last', dilation_rate=(1, 1))"


def _doc():
    results = []
    for model in MODELS:
        for engine in ENGINES[1:]:
            if engine == "keras-numpy":
                results.append(ModelResult(model, engine, "unsupported", "reference", reason="no placeholder"))
            elif engine == "theano" and model == "small_cnn":
                where = Localisation("conv", "Conv2D", "conv2d", LONG_CALL, case_id="model_small_cnn_theano")
                results.append(ModelResult(model, engine, "unexplained", "reference", forward=FAR, localisation=where))
            elif engine == "cntk" and model == "mlp":
                where = Localisation(
                    "dense_2", "Dense", "softmax", "K.softmax(x)", verdict="known", known_id="cntk-softmax"
                )
                results.append(ModelResult(model, engine, "known", "reference", forward=FAR, localisation=where))
            elif engine == "mxnet" and model == "mlp":
                results.append(
                    ModelResult(model, engine, "error", "reference", reason="RuntimeError: <b>boom</b> | `x`")
                )
            else:
                results.append(
                    ModelResult(model, engine, "pass", "reference", forward=Difference(0, 0, 0, 1e-3, False))
                )
    engines = [
        {"name": e, "status": "available", "versions": {"keras": "2.3.1"}, "seconds": 2.0, "models": 3} for e in ENGINES
    ]
    engines[8] = {"name": "keras-numpy", "status": "unsupported", "reason": "no placeholder or function"}
    engines[0]["oracle"] = True
    run = report.ModelsRun(
        settings={"seed": 0, "train": True, "models": [], "backends": []},
        oracle="numpy",
        engines=engines,
        models=[{"name": m, "family": "conv", "about": "what it exercises"} for m in MODELS],
        results=results,
        wall_seconds=9.5,
    )
    return report.assemble(run)


def _terminal(doc, width=80, verbosity=1):
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, highlight=False, force_terminal=False, color_system=None)
    output.render(doc, "terminal", console=console, verbosity=verbosity)
    return buffer.getvalue()


def test_the_terminal_never_goes_past_80_columns_at_any_verbosity():
    doc = _doc()
    for verbosity in (0, 1, 2):
        text = _terminal(doc, 80, verbosity)
        assert max(Text(line).cell_len for line in text.splitlines()) <= 80, text
    assert max(Text(line).cell_len for line in _terminal(doc, 120).splitlines()) <= 120


def test_the_matrix_shows_each_verdict_by_engine_code_with_a_legend():
    text = _terminal(_doc())
    lines = text.splitlines()
    small_cnn = [line for line in lines if line.startswith("small_cnn")]
    assert small_cnn and "FAIL" in " ".join(small_cnn)
    mlp = " ".join(line for line in lines if line.startswith("mlp "))
    assert "known" in mlp and "err" in mlp and "unsup" in mlp and "ref" in mlp
    assert "a_model_with_a_name…" in text  # a long name is cut, never widens the column
    legend = " ".join(lines)
    assert "th=theano" in legend and "knp=keras-numpy" in legend and "e1=my_pkg.my_backend@tensorflow" in legend
    assert "e2=tensorflow1[keras=2.2.4]" in legend


def test_codes_are_unique_and_short():
    found = codes(ENGINES)
    assert len(set(found.values())) == len(ENGINES) and max(len(c) for c in found.values()) <= 5


def test_each_unexplained_finding_is_a_line_naming_the_layer_and_the_call():
    text = _terminal(_doc(), 200)
    assert "small_cnn on theano: layer conv (Conv2D) -> " + LONG_CALL in text
    assert "mlp on mxnet: error: RuntimeError" in text
    assert "not ok: 2 unexplained" in text
    assert "cntk-softmax" not in text and "cntk-softmax" in _terminal(_doc(), 200, verbosity=2)


def test_quiet_prints_the_verdict_line_only():
    assert _terminal(_doc(), verbosity=0).strip().splitlines() == [_terminal(_doc()).strip().splitlines()[-1]]


def test_markdown_has_the_matrix_the_findings_and_escapes_backend_text():
    text = output.render(_doc(), "markdown")
    assert "**Not OK: 2 unexplained**" in text
    assert "| small_cnn | ref |" in text and "**FAIL**" in text
    assert "<b>" not in text and "&lt;b&gt;" in text
    assert "`" + LONG_CALL + "`" in text
    assert "## Known (1)" in text and "cntk-softmax" in text


def test_html_is_one_page_in_the_scoreboards_style_with_the_text_escaped():
    text = output.render(_doc(), "html")
    assert text.startswith("<!doctype html>") and "--pass-bg" in text  # the scoreboard's CSS, inlined
    assert "<b>boom</b>" not in text and "&lt;b&gt;boom&lt;/b&gt;" in text
    assert 'class="cell c-unexplained"' in text and "model_small_cnn_theano" in text
    assert 'href="parity.html"' in text and "<script" not in text


def test_junit_has_one_testcase_per_model_and_engine_counted_as_the_exit_code_counts():
    doc = _doc()
    root = ET.fromstring(output.render(doc, "junit"))
    cases = [c for c in root.iter("testcase") if c.get("name") != "(not run)"]
    assert len(cases) == len(doc["results"])
    assert int(root.get("failures")) == 1 and int(root.get("errors")) == 1
    failed = [c for c in cases if c.find("failure") is not None][0]
    assert failed.get("classname") == "models.theano" and failed.get("name") == "small_cnn"
    assert "layer conv" in failed.find("failure").get("message")
    skipped = {c.get("classname") for c in cases if c.find("skipped") is not None}
    assert {"models.cntk", "models.keras-numpy"} <= skipped


def test_every_file_format_is_told_by_its_extension(tmp_path):
    doc = _doc()
    paths = [str(tmp_path / f"m{ext}") for ext in (".json", ".md", ".html", ".xml")]
    assert output.write_all(doc, paths) == []
    loaded = report.load(paths[0])
    assert loaded["summary"] == doc["summary"] and len(loaded["results"]) == len(doc["results"])
    assert all((tmp_path / p).stat().st_size for p in paths)
