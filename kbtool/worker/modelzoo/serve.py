# py36-compatible
"""The worker's side of `kbtool models`: a request (cmd "model" or "model_trace") -> (header, arrays), as the wire
in kbtool/models/wire.py reads it. Any exception -> {"status": "raised", "error": one line, "raised_in": where (raised.py)}; a model or a
substitution the engine cannot run -> {"status": "unsupported", "error": why}."""

import traceback

from . import api as apis
from . import raised, run, substitute, zoo


def one_line(exc):
    text = traceback.format_exception_only(type(exc), exc)[-1].strip()
    return " ".join(text.split())[:500]


def model_def(request):
    name = request.get("model")
    if name not in zoo.MODELS:
        raise zoo.Unsupported("no model named {!r} in this worker's zoo".format(name))
    return zoo.MODELS[name]


def serve(K, request, arrays, base_modules=()):
    """Answer one request. `K`: the worker's backend module; `base_modules`: the base backend's module names when K
    is a custom module (`mod@env`, started with --base-backend), else ()."""
    out = run.Arrays()
    header = {"status": "ok", "model": request.get("model")}
    api = mdef = None
    try:
        api = apis.detect(K, base_modules)
        header.update(flavor=api.flavor, keras=api.version, engine=api.engine)
        if base_modules:
            header["substituted"] = substitute.substitute(api, K, base_modules)
        mdef = model_def(request)
        seed = int(request.get("seed", 0))
        if request.get("cmd") == "model_trace":
            from . import trace

            header["calls"] = trace.trace(api, mdef, seed, str(request.get("layer")), list(arrays), out)
        else:
            header.update(run.run(api, mdef, seed, bool(request.get("train", True)), out))
    except zoo.Unsupported as exc:
        return {"status": "unsupported", "error": " ".join(str(exc).split()), "model": request.get("model")}, []
    except Exception as exc:
        failed = {"status": "raised", "error": one_line(exc), "model": request.get("model")}
        if api is not None and mdef is not None and request.get("cmd") != "model_trace":
            try:
                failed["raised_in"] = raised.locate(
                    api, mdef, int(request.get("seed", 0)), bool(request.get("train", True))
                )
            except Exception:  # where it raised is a help, never a second failure
                pass
        return failed, []
    return header, out.items
