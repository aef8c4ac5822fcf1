"""The audio store: content-addressed FLAC plus one record per completed request
(:mod:`simulplay.store.store`), and the whole-store check and clean-up that ``simulplay
store verify`` and ``store gc`` run (:mod:`simulplay.store.check`). It knows nothing of
backends or plans: synthesis writes into it, replay and the reports read from it."""

from simulplay.store.store import AudioDamage, AudioStore, describe_request

__all__ = ["AudioDamage", "AudioStore", "describe_request"]
