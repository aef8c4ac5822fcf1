"""The core: the shared vocabulary every layer uses — located errors, field checks, the
registry and spec syntax, signatures, tables and atomic writes, exact time, provenance,
progress, safe JSON, safe paths, output keys, process pools and the version."""
