"""The sample traces the demo runs on (``sample_traces.jsonl``), the demo experiment
(``demo.toml``) and the generator that wrote the traces (``python -m traces.generate``
from the repository root). Installed, this folder is the package ``simulplay.sample_traces``
(the build maps it; nothing is copied or linked)."""
