"""Chunk release when closed-loop outputs are decided again
(:mod:`simulplay.durationmodel.redecide`): each recorded request's chunks by text, and the
chunk rows of a decided output."""

from __future__ import annotations

import numpy as np
import pandas as pd


class ChunkTable:
    """Chunk release: each recorded request's chunks (ready offset after its start, in
    seconds, and samples), by text, and the chunk rows of a decided output."""

    def __init__(self, manifest: pd.DataFrame, chunks: pd.DataFrame, keys: list[str], panel_keys: list[str]):
        texts = manifest[[*keys, "seq", "text"]]
        ch = chunks.merge(texts, on=[*keys, "seq"], how="inner").sort_values([*keys, "seq", "chunk"], kind="stable")
        self.keys, self.panel_keys = keys, panel_keys
        self.per_request: dict[tuple, list[tuple[float, int]]] = {}
        self.by_text: dict[tuple, tuple[tuple[float, int], ...]] = {}
        ident = zip(*(ch[k].tolist() for k in [*keys, "seq"]))
        for key, off, n in zip(ident, ch["ready_offset_s"].to_numpy(float).tolist(),
                               ch["n_samples"].to_numpy(np.int64).tolist()):
            self.per_request.setdefault(key, []).append((off, n))
        position = {k: i for i, k in enumerate(keys)}
        text_of = dict(zip(zip(*(texts[k].tolist() for k in [*keys, "seq"])), texts["text"].tolist()))
        for key, parts in self.per_request.items():
            panel = tuple((k, str(key[position[k]])) for k in panel_keys)
            self.by_text.setdefault((panel, text_of[key]), tuple(parts))

    def own(self, rows: pd.DataFrame, panel: tuple) -> dict[tuple, tuple[tuple[float, int], ...]]:
        """The chunks of one output's recorded requests, by text."""
        out: dict[tuple, tuple[tuple[float, int], ...]] = {}
        for key, text in zip(zip(*(rows[k].tolist() for k in [*self.keys, "seq"])), rows["text"].tolist()):
            if key in self.per_request:
                out.setdefault((panel, text), tuple(self.per_request[key]))
        return out

    def rows(self, new: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
        """The chunk rows of a decided output's requests (``new.attrs["chunks"]``: each
        request's unmapped chunks)."""
        rate = new["sample_rate"].tolist() if "sample_rate" in new else [0] * len(new)
        seq, cols = new["seq"].tolist(), {k: [] for k in ("seq", "chunk", "ready_offset_s", "audio_s", "n_samples")}
        for i, parts in enumerate(new.attrs["chunks"]):
            for c, (off, n) in enumerate(parts):
                for name, value in zip(cols, (seq[i], c, off, n / rate[i] if rate[i] else 0.0, n)):
                    cols[name].append(value)
        first = new.iloc[0] if len(new) else {}
        return pd.DataFrame({**{k: [first[k]] * len(cols["seq"]) for k in keys}, **cols})
