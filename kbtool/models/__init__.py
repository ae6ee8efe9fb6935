"""`kbtool models`: whole Keras models on every engine, compared with an oracle layer by layer, each inconsistency
traced to the K.* call that caused it and turned into a spec case."""
