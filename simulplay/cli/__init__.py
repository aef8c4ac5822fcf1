"""The command line (``simulplay``): a typer application whose commands parse their flags,
call one library function and write or print the result. ``simulplay.cli:main`` is the
console entry point."""

import os

# One OpenBLAS thread unless the caller chose (set before NumPy loads): the command line's
# matrices are small (the duration model's least squares), and on a machine whose cores are
# busy OpenBLAS's second thread spins waiting for a core; a modelled sweep then spent twice
# its CPU time and up to 1.7× its wall time (docs/benchmarks.md).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from simulplay.cli.app import app, main  # noqa: E402 - after the thread setting

__all__ = ["app", "main"]
