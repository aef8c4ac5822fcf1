"""Live runs: a trace's requests sent in real time to a TTS server, with a virtual player.

``client`` (the asyncio client and what it records per request), ``player`` (the virtual
player per output), ``tables`` (the live manifest, chunk table, requests, timeline and
lateness), ``compare`` (replay of the live manifest against the virtual player),
``predict`` (an isolated synthesis of the same requests, replayed serially and with one
shared server, against the live run), ``launcher`` (a local backend served as a child
process), ``run`` (the whole run, its files) and ``demo`` (``simulplay demo --live``).
docs/live.md describes the command, the time base and the measured agreement.
"""
