"""TensorFlow 1 backend: keras 2.3.1's own `keras/backend/tensorflow_backend.py` on TensorFlow 1.15.5, Python 3.7.

This is the TensorFlow backend the Keras 2.x docs describe (graph mode, a session per process), where the
`tensorflow` backend is tf_keras 2.21, a rewrite on TF2's eager execution.
"""

from kbtool.runners.base import Recipe

RECIPE = Recipe(
    name="tensorflow1",
    python_version="3.7",
    # the last TF1 release (cp37 wheels); h5py 3 and protobuf 4 postdate it and break its imports
    packages=["tensorflow==1.15.5", "keras==2.3.1", "h5py<3", "protobuf<3.21"],
    module="keras.backend",
    keras_backend="tensorflow",
    version_of=["tensorflow", "keras", "numpy"],
    # K.eval and K.function both run in keras's own session on the default graph, which kbtool clears before each
    # case (K.clear_session): the graph would otherwise hold every earlier case's ops
    clear_session=True,
    env_vars=lambda env_dir: {"TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": "-1"},
    notes="graph mode: eager mode is K.eval in Keras's session, as Keras 2.3.1 code ran it.",
    case_seconds=0.02,  # seconds per case, measured alone: where the pool starts it (kbtool/runners/pool.py)
)
