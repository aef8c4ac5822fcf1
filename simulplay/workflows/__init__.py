"""Workflows: what orchestrates models, stores and files on top of the pure layers —
experiment files (:mod:`.experiment`), the ``run`` pipeline (:mod:`.pipeline`), content
diagnostics (:mod:`.diagnostics`) and transcription (:mod:`.transcripts`), the
edge-silence sweep (:mod:`.edges`), the speech server (:mod:`.serve`), the SimulEval
export (:mod:`.export_simuleval`) and text latency with OmniSTEval (:mod:`.textlatency`). Errors name the
source their caller passes (a file, an experiment file's key, a flag)."""
