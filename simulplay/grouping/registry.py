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
from simulplay.grouping.commit import COMMITS, CommitPolicy
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

    def prepare(self, stream: Stream) -> Stream:
        """The stream this rule groups: the stream itself, or for a revising one what the
        default commit policy, ``eager``, speaks (a rule with a policy: :class:`Committing`)."""
        if not stream.revising:
            return stream
        return COMMITS.get("eager", "commit")().commit(stream).stream


@dataclass(frozen=True)
class Committing(Rule):
    """A commit policy, then a grouping rule: the condition ``POLICY+RULE``
    (``stable:k=2+punct:cap=2,min_words=3``). The rule groups what the policy commits.
    ``eager`` is the default policy and never appears in a condition: ``eager+punct`` is
    ``punct``, which :func:`parse_rule` returns as the plain rule."""

    policy: CommitPolicy
    rule: Rule

    def params(self) -> dict[str, Any]:
        """The rule's parameters."""
        return self.rule.params()

    def canonical(self) -> str:
        """``POLICY+RULE``, both canonical."""
        return f"{self.policy.canonical()}{COMMIT_SEP}{self.rule.canonical()}"

    def to_dict(self) -> dict[str, Any]:
        """The rule's configuration with the policy's under ``commit``."""
        return {**self.rule.to_dict(), "commit": self.policy.to_dict()}

    @property
    def cuts_updates(self) -> bool:
        """Whether the rule's groups are character spans (as the rule's own)."""
        return bool(getattr(self.rule, "cuts_updates", False))

    def prepare(self, stream: Stream) -> Stream:
        """What the policy commits of the stream."""
        return self.policy.commit(stream).stream

    def group(self, stream: Stream) -> list[Group]:
        """The rule's groups of the stream the policy committed (:meth:`prepare` it first)."""
        return self.rule.group(stream)


COMMIT_SEP = "+"


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
    ``punct:unit=char``), or a condition ``POLICY+RULE`` (``stable:k=2+punct``: a commit
    policy, then the rule; ``eager+RULE`` is the plain rule)."""
    policy, rest = split_commit(text)
    rule = RULES.parse(rest, source=source)
    return with_commit(policy, rule)


def rule_from_dict(data: dict[str, Any], *, source: str = "config") -> Rule:
    """Rebuild a saved rule (``to_dict()``'s output; a rule after a commit policy holds the
    policy's ``to_dict()`` under ``commit``)."""
    data = dict(data)
    policy = data.pop("commit", None)
    rule = RULES.from_dict(data, key="rule", source=source)
    return rule if policy is None else with_commit(COMMITS.from_dict(dict(policy), key="commit", source=source), rule)


def split_commit(text: str) -> tuple[CommitPolicy | None, str]:
    """``POLICY+RULE`` → (the policy, ``RULE``): cut at the first ``+`` whose left side is a
    commit policy; a text without one is (None, the text)."""
    for i, ch in enumerate(text):
        if ch == COMMIT_SEP:
            name = text[:i].strip().partition(":")[0]
            if COMMITS.has(name):
                return COMMITS.parse(text[:i], source="condition"), text[i + 1:]
    return None, text


def with_commit(policy: CommitPolicy | None, rule: Rule) -> Rule:
    """``rule`` after ``policy`` (the plain rule for None or ``eager``)."""
    if policy is None or policy.canonical() == "eager":
        return rule
    return Committing(policy, rule.rule if isinstance(rule, Committing) else rule)


def canonical_condition(text: str) -> str:
    """The canonical string of a RULE string, or the text unchanged if it is not one.

    Manifests may label conditions freely; known rules compare by canonical form.
    """
    try:
        return parse_rule(text).canonical()
    except InputError:
        return text


def commit_rules(rules: list[Rule], commits: list[str] | None, *, source: str = "--commit") -> list[Rule]:
    """Every rule after every commit policy of ``commits`` (policy by policy, then rule by
    rule; repeats refused); ``rules`` unchanged when no policy is given."""
    if not commits:
        return rules
    from simulplay.grouping.commit import parse_commit, unique_commits

    policies = unique_commits([parse_commit(c, source=source) for c in commits])
    return unique_rules([with_commit(p, r) for p in policies for r in rules])


def revising_allowed(commits, rules) -> bool:
    """Whether revising streams may be grouped: a commit policy was chosen (``commits``, or a
    rule that carries one)."""
    return bool(commits) or any(isinstance(r, Committing) for r in rules)


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
