"""`kbtool models`' progress on stderr: check's live table and plain lines, counting models, naming the one running."""

import io

from kbtool.models.progress import LEGEND, ModelsProgress
from kbtool.models.records import EngineRun


def test_the_live_table_names_the_model_running_and_counts_runs_not_ok():
    progress = ModelsProgress({"tensorflow": 3, "theano": 3}, stream=io.StringIO(), live=False)
    progress.model("tensorflow", "mlp")
    progress(("theano"), EngineRun("theano", "mlp", "crash", "killed"))
    lines = [str(line) for line in progress.render_lines(80)]
    assert lines[0] == LEGEND and len(LEGEND) <= 80
    tensorflow = [line for line in lines if line.startswith("tensorflow")][0]
    assert "mlp · 0:00" in tensorflow and "0/3" in tensorflow
    theano = [line for line in lines if line.startswith("theano")][0]
    assert "1/3" in theano and "1 not ok" in theano
    assert all(len(line) <= 80 for line in lines)


def test_plain_lines_say_models_done_per_engine():
    stream = io.StringIO()
    with ModelsProgress({"tensorflow": 1}, stream=stream, live=False) as progress:
        progress.model("tensorflow", "mlp")
        progress("tensorflow", EngineRun("tensorflow", "mlp", "ok"))
    assert "tensorflow done: 1 model in 0:00 · 1 ok, 0 not ok" in stream.getvalue()
    assert "not pass" not in stream.getvalue()
