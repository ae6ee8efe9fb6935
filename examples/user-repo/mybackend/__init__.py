"""mybackend: a Keras backend derived from tf_keras (mybackend.backend) and the precision policy it follows.

The package imports nothing heavy: `mybackend.policy` is plain Python, tested without TensorFlow; only
`mybackend.backend` (what keras.json or `kbtool check --backend mybackend.backend@tensorflow` loads) imports tf_keras.
"""

__version__ = "0.3.0"
