"""Workflows: what orchestrates models, stores and files on top of the pure layers —
experiment files (:mod:`.experiment`), the ``run`` pipeline (:mod:`.pipeline`), content
diagnostics (:mod:`.diagnostics`) and transcription (:mod:`.transcripts`), the
edge-silence sweep (:mod:`.edges`) and the speech server (:mod:`.serve`). Errors name the
source their caller passes (a file, an experiment file's key, a flag)."""
