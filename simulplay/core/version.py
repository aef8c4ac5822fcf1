"""The package version, in the core layer so that signatures and reports can name it
without importing the top-level package (whose attributes are the Python API)."""

__version__ = "0.1.0"
