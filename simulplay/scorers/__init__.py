"""Quality scorers: pure functions of sample arrays (``simulplay quality``, docs/quality.md).

* :mod:`.dnsmos` — DNSMOS P.835 (SIG, BAK, OVRL) and P.808 from speechmos' bundled ONNX models;
* :mod:`.similarity` — speaker similarity: cosines of Resemblyzer's GE2E embeddings;
* :mod:`.joins` — what a listener hears at each request (or chunk) boundary: pauses, level
  steps, discontinuities.

Models load lazily, on first use, from the files the wheels bundle: nothing is downloaded.
"""
