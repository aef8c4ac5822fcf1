"""Synthesis: planning requests with their reuse keys (:mod:`.plan`), running them on an
executor (:mod:`.executors`: serial, worker processes, Ray), timing each request
(:mod:`.request`), counting what happened (:mod:`.stats`) and reading the store's records
back into the request manifest and chunk table (:mod:`.manifest`, :mod:`.columns`);
:mod:`.run` does all of it and writes the files.

Submodules are imported by name (``from simulplay.synthesis.run import
synthesize_to_manifest``); this package module imports nothing, so that replay can read
:mod:`.columns` without loading the executors.
"""
