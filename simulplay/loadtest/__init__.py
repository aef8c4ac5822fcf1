"""The load client (``simulplay load``): a TTS server's load curve, measured on the live client.

``run`` (the levels of ``--concurrency``, closed or open loop, driven on
:func:`simulplay.live.client.send`, and the load table it writes) and ``stats`` (the recorded
requests turned into the load table's rows: TTFA, service, RTF, underruns, the knees).
docs/many-listeners.md describes the command and its table.
"""
