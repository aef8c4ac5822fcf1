"""Which streams a command works on: ``--talks ID…`` / ``--talks-from FILE`` pick talks,
``--events keep|drop`` decides what happens to non-speech event tags
(:mod:`simulplay.traces.events`). Every command that reads traces or their tables picks
talks the same way, and an unknown id is one line naming a few known ones."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from simulplay.core.errors import InputError
from simulplay.traces.events import apply_events
from simulplay.traces.model import Stream


def talk_ids(talks: Sequence[str] = (), talks_from: Path | str | None = None, *,
             from_flag: str = "--talks-from") -> tuple[str, ...]:
    """The talk ids of ``--talks`` (repeatable, each may hold several separated by commas)
    and of ``--talks-from FILE`` (one id per line, or several separated by commas or spaces;
    ``#`` starts a comment), each once, in order; empty: every talk. Errors about the file
    name ``from_flag`` (the Python API's ``talks_from``)."""
    given = [t for text in talks for t in text.replace(",", " ").split()]
    if talks_from is not None:
        path = Path(talks_from)
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as e:
            raise InputError.at(path, f"cannot be read ({e.__class__.__name__})", field=from_flag,
                                accepted="a UTF-8 text file with one talk id per line") from e
        from_file = [t for line in lines for t in line.split("#", 1)[0].replace(",", " ").split()]
        if not from_file:
            raise InputError.at(path, "names no talk", field=from_flag, accepted="one talk id per line")
        given += from_file
    return tuple(dict.fromkeys(given))


def check_talks(talks: Sequence[str], known: Iterable[str], flag: str = "--talks") -> set[str]:
    """``talks`` as a set when every one is known; else an InputError naming the unknown
    ones and a few known ones."""
    known = set(map(str, known))
    missing = [t for t in talks if t not in known]
    if missing:
        shown = ", ".join(sorted(known)[:8]) + (f", … ({len(known)} in all)" if len(known) > 8 else "")
        raise InputError.at(f"{flag} {','.join(missing)}", "not in the input", accepted=f"talk ids such as {shown}")
    return set(talks)


def pick_talks(streams: Sequence[Stream], talks: Sequence[str], flag: str = "--talks") -> list[Stream]:
    """The streams of ``talks`` (all when empty), in their order."""
    if not talks:
        return list(streams)
    chosen = check_talks(talks, (s.talk_id for s in streams), flag)
    return [s for s in streams if s.talk_id in chosen]


def pick_rows(frame: Any, talks: Sequence[str], flag: str = "--talks", column: str = "talk_id") -> Any:
    """The rows of a table (trace, manifest, summary) whose ``talk_id`` is one of ``talks``
    (all when empty)."""
    if not talks:
        return frame
    chosen = check_talks(talks, frame[column].astype(str).unique(), flag)
    return frame[frame[column].astype(str).isin(chosen)].reset_index(drop=True)


def prepare_streams(streams: Sequence[Stream], *, talks: Sequence[str] = (), events: str = "keep",
                    events_flag: str = "--events", talks_flag: str = "--talks") -> tuple[list[Stream], dict[str, Any]]:
    """The streams of ``talks`` under the ``events`` mode, and the signature fields to record
    (``events`` when the streams hold event tags); errors name ``talks_flag`` and
    ``events_flag`` (the Python API's ``talks`` and ``events``)."""
    return apply_events(pick_talks(streams, talks, talks_flag), events, flag=events_flag)
