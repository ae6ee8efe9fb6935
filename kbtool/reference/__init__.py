"""The NumPy reference, itself a Keras backend module (`backend`, `variable`, `placeholder`,
`function`, `eval`, and the ops), organised by category. Written for kbtool from the docs'
definitions; each public op has exactly one reference function. Module names never equal an
op name (`shape`, `update`), or the submodule would shadow the function.
"""

from .compare_ops import *  # noqa: F403
from .control import *  # noqa: F403
from .conv import *  # noqa: F403
from .core import *  # noqa: F403
from .core import (  # noqa: F401  # noqa: F401
    backend,
    constant,
    dtype,
    epsilon,
    eval,
    floatx,
    function,
    image_data_format,
    int_shape,
    is_placeholder,
    ndim,
    placeholder,
    variable,
)
from .creation import *  # noqa: F403
from .ctc import *  # noqa: F403
from .linalg import *  # noqa: F403
from .losses import *  # noqa: F403
from .manipulation import *  # noqa: F403
from .math import *  # noqa: F403
from .nn import *  # noqa: F403
from .norm import *  # noqa: F403
from .random_ops import *  # noqa: F403
from .reduce import *  # noqa: F403
from .updates import *  # noqa: F403
