"""The backends kbtool knows, by name: numpy (reference), the built-in recipes, custom modules."""
from ..errors import KbtoolError
from . import cntk, custom, numpy, tensorflow, theano
from .base import Unavailable

RECIPES = {r.name: r for r in (tensorflow.RECIPE, theano.RECIPE, cntk.RECIPE)}
BUILTIN = ["numpy"] + list(RECIPES)


def launch_for(name):
    """A Launch for `name`, or Unavailable with the reason."""
    if name == "numpy":
        return numpy.launch()
    if name in RECIPES:
        return RECIPES[name].launch()
    if custom.is_custom(name):
        return custom.launch(name, RECIPES)
    raise KbtoolError("unknown backend {!r}; built-in backends are {}, or give a module path like "
                      "my_package.my_module[@ENV]".format(name, ", ".join(BUILTIN)))


def probe(name):
    """Start a worker for `name` and report what it says: status, versions, reason."""
    from .client import WorkerClient

    info = {"name": name, "kind": "builtin" if name in BUILTIN else "custom"}
    try:
        launch = launch_for(name)
    except Unavailable as exc:
        info.update(status="not installed", reason=str(exc))
        return info
    client = WorkerClient(launch)
    hello = client.start()
    client.stop()
    info["python"] = hello.get("python")
    if hello.get("status") == "ready":
        info.update(status="available", versions=hello.get("versions", {}), module=hello.get("module"),
                    import_seconds=hello.get("import_seconds"))
    else:
        info.update(status="broken", reason=hello.get("error"))
    return info
