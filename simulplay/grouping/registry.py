"""The registry of grouping rules and the RULE-string parser.

A rule is a frozen dataclass registered under a name with :func:`register_rule`; its
fields are its parameters (with defaults) and ``group(stream)`` returns its groups. A
RULE string is ``name`` or ``name:key=value,key=value``. The canonical string lists
every parameter in field order (``punct`` → ``punct:cap=2,min_words=3``), so saved
conditions recreate the exact rule; a parameter whose field is marked ``omit_default``
is left out while it holds its default (``unit=word`` of ``punct`` and ``words``:
``words:n=20,unit=char`` → ``words:n=20,cap=2,unit=char``), and ``to_dict()`` always
lists every parameter::

    @register_rule("every_other")
    @dataclass(frozen=True)
    class EveryOther(Rule):
        def group(self, stream): ...
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from simulplay.core.errors import InputError
from simulplay.core.specs import Registry, canonical_spec, params
from simulplay.traces.model import Stream

TRIGGERS = ("immediate", "timer", "punct", "words", "eos", "sentence")


@dataclass(frozen=True)
class Group:
    """Consecutive updates ``first..last`` (0-based indices into the stream, both inclusive)
    released together at ``dispatch_s`` (seconds from source start) by ``trigger``
    (one of :data:`TRIGGERS`).

    ``span`` is None for a group of whole updates (the built-in rules). A rule that cuts
    inside an update (a framework's sentence splitter) gives ``span = (start, end)``:
    characters ``start:end`` of the stream's joined text (``Stream.joined``), the
    group's text with its edge whitespace stripped; ``first`` and ``last`` are then the
    updates holding its first and last character other than whitespace."""

    first: int
    last: int
    dispatch_s: float
    trigger: str
    span: tuple[int, int] | None = None

    @property
    def n_updates(self) -> int:
        """How many updates the group holds (``last - first + 1``)."""
        return self.last - self.first + 1


@dataclass(frozen=True)
class Rule:
    """Base class: subclasses are frozen dataclasses whose fields are parameters."""

    name: ClassVar[str] = ""
    # True for a rule whose groups are character spans that may end inside an update (the
    # framework rules): the duration model and the policy engine handle whole updates only.
    cuts_updates: ClassVar[bool] = False

    def group(self, stream: Stream) -> list[Group]:  # pragma: no cover - interface
        """The stream's groups in order, covering every update once, or with spans every
        character of the joined text other than whitespace once (dispatch in seconds)."""
        raise NotImplementedError

    def params(self) -> dict[str, Any]:
        """The rule's parameters (its dataclass fields) by name, in field order."""
        return params(self)

    def canonical(self) -> str:
        """The canonical RULE string, e.g. ``timer:w=4``."""
        return canonical_spec(self)

    def to_dict(self) -> dict[str, Any]:
        """The registered name and every parameter (defaults included)."""
        return {"rule": self.name, **self.params()}

    def __str__(self) -> str:
        return self.canonical()


RULES: Registry[Rule] = Registry("grouping rule", group="simulplay.rules", key="rule")
R = TypeVar("R", bound=type[Rule])


def groups_of(rule: Rule, stream: Stream) -> list[Group]:
    """``rule.group(stream)``. A plugin's rule that raises is one line (an InputError, exit code
    2): the rule, the plugin's file and line where it raised, and the exception. A built-in
    rule that raises is a bug in simulplay: its traceback is kept."""
    try:
        return rule.group(stream)
    except Exception as e:
        module = sys.modules.get(type(rule).__module__)
        if type(rule).__module__.startswith("simulplay.") or module is None:
            raise
        file = getattr(module, "__file__", None) or type(rule).__module__
        frames = traceback.extract_tb(e.__traceback__)
        line = next((f.lineno for f in reversed(frames) if f.filename == file), None)
        if line is None:  # raised elsewhere (a library the rule called): where the rule called out
            line = frames[-1].lineno if frames else "?"
        message = " ".join(f"{type(e).__name__}: {e}".split())
        raise InputError.at(f"rule '{rule.canonical()}' ({file}, line {line})",
                            f"group() of talk {stream.talk_id}, system {stream.system} raised {message}",
                            accepted="a rule whose group(stream) returns the stream's groups") from e


def register_rule(name: str) -> Callable[[R], R]:
    """Class decorator adding a rule to the registry under ``name``."""
    return RULES.register(name)


def parse_rule(text: str, *, source: str = "--rule") -> Rule:
    """Parse a RULE string (``immediate``, ``timer:w=4``, ``punct``, ``words:n=6,cap=3``,
    ``punct:unit=char``)."""
    return RULES.parse(text, source=source)


def canonical_condition(text: str) -> str:
    """The canonical string of a RULE string, or the text unchanged if it is not one.

    Manifests may label conditions freely; known rules compare by canonical form.
    """
    try:
        return parse_rule(text).canonical()
    except InputError:
        return text


def unique_rules(rules: list[Rule]) -> list[Rule]:
    """Rules in order with repeats (same canonical string) refused: a repeated rule would
    make two outputs with the same condition."""
    seen: set[str] = set()
    for r in rules:
        if r.canonical() in seen:
            raise InputError.at(f"--rule '{r.canonical()}'", "is given twice",
                                accepted="each grouping rule once (rules compare by canonical form)")
        seen.add(r.canonical())
    return rules
