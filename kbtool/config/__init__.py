"""keras.json as the Keras docs describe it, and the `kbtool config` commands."""
