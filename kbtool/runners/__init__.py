"""Runners: one module per backend (controller side) plus the worker that runs inside each backend's env."""
