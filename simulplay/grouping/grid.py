"""Grids of a grouping rule's parameters: ``NAME:key=VALUES,key=VALUES`` (docs/sweeps.md#grids).

VALUES is one value, a list ``1,2,4`` (a comma followed by no ``key=`` continues the
list), a range of integers ``a..b`` (step 1, both ends included) or a range of numbers
``a..b:step`` (``a, a + step, …`` up to ``b`` included when it falls on the grid, each
value rounded to 9 decimals so that ``0.1..0.3:0.1`` gives 0.1, 0.2, 0.3). Parameters not
named keep their defaults; a family's points are every combination of its values, the
first named key varying slowest. ``timer:w=0.5..8:0.5`` is 16 timers; ``words:n=2..16``
is 15; ``punct:cap=1..4,min_words=2,3`` is 8.

Every problem is a one-line :class:`~simulplay.core.errors.InputError` naming the ``--rule``
given: an unknown rule or key, a key given twice, a value that is not a number (or not
a whole number for an integer parameter), an empty range (``b < a``), a step ≤ 0, a value
the rule refuses (``words:n=0``), and more than :data:`MAX_POINTS` points over all
families (counted before any point is built, so ``w=0..1000000:0.001`` fails at once).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from simulplay.core.errors import InputError
from simulplay.core.specs import format_value
from simulplay.grouping.registry import RULES, Rule, parse_rule, with_commit

#: Grid points over all families one sweep accepts.
MAX_POINTS = 10_000
NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
RANGE = re.compile(rf"^({NUMBER})\.\.({NUMBER})(?::({NUMBER}))?$")
SYNTAX = "NAME:key=VALUES,… with VALUES a value, a list 1,2,4, a range a..b (integers) or a..b:step"


@dataclass(frozen=True)
class RuleGrid:
    """One ``--rule`` family: its text, the rule name, the keys it names with their values
    (in the order given) and its points, each a rule with the values that made it."""

    text: str
    name: str
    values: dict[str, tuple[Any, ...]]
    points: tuple[tuple[Rule, dict[str, Any]], ...]

    @property
    def axis(self) -> str | None:
        """The first key with more than one value (the x axis of the family's figure)."""
        return next((k for k, v in self.values.items() if len(v) > 1), None)

    def rules(self) -> list[Rule]:
        """The family's rules in grid order."""
        return [r for r, _ in self.points]


def parse_grids(texts: list[str], *, source: str = "--rule", limit: int = MAX_POINTS, registry: Any = RULES,
                build: Any = parse_rule) -> list[RuleGrid]:
    """Every family of ``texts`` (each a ``--rule``), checked in full before any point is
    built: the total number of points must stay at or below ``limit``. ``registry`` and
    ``build`` name and build the components (the rules; commit policies:
    :func:`parse_commit_grids`)."""
    parsed = [_parse_values(t, source, registry) for t in texts]
    total = 0
    for text, (_, _, values) in zip(texts, parsed):
        total += math.prod(_count(v) for v in values.values())
        if total > limit:
            raise InputError.at(f"{source} '{text}'", f"the grids reach {total:,} points, more than {limit:,}",
                                accepted=f"at most {limit:,} grid points over all {source} families")
    return [_build(text, *p, source, build) for text, p in zip(texts, parsed)]


def parse_commit_grids(texts: list[str], *, source: str = "--commit", limit: int = MAX_POINTS) -> list[RuleGrid]:
    """Families of commit policies in the grid syntax (``stable:k=1..4``, ``hold:t=0.25..2:0.25``,
    ``mask:k=0..6``); a family's points are policies."""
    from simulplay.grouping.commit import COMMITS, parse_commit

    return parse_grids(texts, source=source, limit=limit, registry=COMMITS, build=parse_commit)


def crossed_grids(commits: Sequence[RuleGrid], rules: Sequence[RuleGrid]) -> list[RuleGrid]:
    """Every family of policies crossed with every family of rules: one grid per pair, its
    points ``POLICY+RULE`` (policy values first, then the rule's; a policy key a rule also
    has is named ``commit_KEY``), at most :data:`MAX_POINTS` in all."""
    total = sum(len(c.points) * len(r.points) for c in commits for r in rules)
    if total > MAX_POINTS:
        raise InputError.at(f"--commit '{commits[0].text}'", f"crossed with the rules the grids reach {total:,} "
                            f"points, more than {MAX_POINTS:,}", accepted=f"at most {MAX_POINTS:,} grid points")
    out = []
    for c in commits:
        for r in rules:
            name = {k: f"commit_{k}" if k in r.values else k for k in c.values}
            points = tuple((with_commit(p, rule), {**{name[k]: v for k, v in pv.items()}, **rv})
                           for p, pv in c.points for rule, rv in r.points)
            out.append(RuleGrid(f"{c.text}+{r.text}", f"{c.name}+{r.name}",
                                {**{name[k]: v for k, v in c.values.items()}, **r.values}, points))
    return out


def parse_family(text: str, *, source: str) -> RuleGrid:
    """A sweep table's ``family``: a rule grid, or a family of commit policies crossed with
    one (``POLICIES+RULES``, cut at the first ``+`` after a commit policy's name), as
    :func:`crossed_grids` made it."""
    from simulplay.grouping.commit import COMMITS

    for i, ch in enumerate(text):
        if ch == "+" and COMMITS.has(text[:i].strip().partition(":")[0]):
            return crossed_grids(parse_commit_grids([text[:i]], source=source), parse_grids([text[i + 1:]],
                                                                                             source=source))[0]
    return parse_grids([text], source=source)[0]


@dataclass(frozen=True)
class _Axis:
    """A stand-in for a rule's field: a numeric axis that is no rule parameter."""

    type: str
    metadata: dict = dataclasses.field(default_factory=dict)


def parse_axis(key: str, text: str, *, kind: str = "int", source: str) -> tuple[Any, ...]:
    """The values of one grid axis outside a rule (``--servers 1..8``), in the grid's own
    syntax (a value, a list ``1,2,4``, a range ``a..b`` or ``a..b:step``); ``kind``: ``int``
    or ``float``. Errors are one line naming ``source`` and the text."""
    where = f"{source} '{text}'"
    tokens = [t.strip() for t in str(text).split(",")]
    if not all(tokens):
        raise InputError.at(where, "has an empty value", accepted=SYNTAX.split(" with ", 1)[1])
    values = _values(key, tokens, _Axis(kind), where)
    return tuple(p for v in values for p in (v.points() if isinstance(v, _Range) else [v]))


def _parse_values(text: str, source: str, registry: Any = RULES):
    where = f"{source} '{text}'"
    name, _, rest = text.strip().partition(":")
    cls = registry.get(name, where)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init and not f.name.startswith("_")}
    accepted = ", ".join(fields) or "no parameters"
    items: list[list[str]] = []
    for part in filter(None, (p.strip() for p in rest.split(","))) if rest.strip() else []:
        if "=" in part:
            items.append([part])
        elif items:
            items[-1].append(part)
        else:
            raise InputError.at(where, f"'{part}' names no parameter", accepted=SYNTAX)
    values: dict[str, list] = {}
    for item in items:
        key, _, first = item[0].partition("=")
        key = key.strip()
        if key not in fields:
            raise InputError.at(where, f"unknown parameter '{key}' for {registry.what} '{name}'", accepted=accepted)
        if key in values:
            raise InputError.at(where, f"parameter '{key}' is given twice", accepted=SYNTAX)
        values[key] = _values(key, [first.strip(), *item[1:]], fields[key], where)
    return name, fields, values


def _values(key: str, tokens: list[str], field: dataclasses.Field, where: str) -> list:
    """A key's values: one range token, or a list of single values (as typed strings)."""
    kind = field.type if isinstance(field.type, str) else getattr(field.type, "__name__", "")
    numeric = kind in ("int", "float") and not field.metadata.get("choices")
    if len(tokens) == 1 and ".." in tokens[0]:
        if not numeric:
            raise InputError.at(where, f"'{key}={tokens[0]}': a range needs a numeric parameter",
                                accepted=f"{key}=value or a list {key}=v1,v2")
        return [_range(key, tokens[0], kind, where)]
    out = []
    for tok in tokens:
        if numeric:
            out.append(_number(key, tok, kind, where))
        else:
            out.append(tok)
    if len(set(map(str, out))) != len(out):
        raise InputError.at(where, f"'{key}' repeats a value", accepted="each value once")
    return out


def _number(key: str, tok: str, kind: str, where: str) -> float | int:
    try:
        value = float(tok)
    except ValueError:
        raise InputError.at(where, f"'{key}={tok}' is not a number", accepted=SYNTAX) from None
    if not math.isfinite(value):
        raise InputError.at(where, f"'{key}={tok}' is not a finite number", accepted=SYNTAX)
    if kind == "int":
        if value != int(value):
            raise InputError.at(where, f"'{key}={tok}' is not a whole number", accepted=f"{key}=<int>")
        return int(value)
    return value


@dataclass(frozen=True)
class _Range:
    start: float
    stop: float
    step: float
    kind: str

    def count(self) -> int:
        return int(math.floor((self.stop - self.start) / self.step + 1e-9)) + 1

    def points(self) -> list[float | int]:
        out = [round(self.start + k * self.step, 9) for k in range(self.count())]
        return [int(v) for v in out] if self.kind == "int" else out


def _range(key: str, tok: str, kind: str, where: str) -> _Range:
    m = RANGE.match(tok)
    if not m:
        raise InputError.at(where, f"'{key}={tok}' is not a range", accepted="a..b (integers) or a..b:step")
    a, b, step = float(m[1]), float(m[2]), m[3]
    if step is None:
        if a != int(a) or b != int(b):
            raise InputError.at(where, f"'{key}={tok}': a range of non-integers needs a step",
                                accepted=f"{key}={m[1]}..{m[2]}:STEP")
        step_v = 1.0
    else:
        step_v = float(step)
        if not step_v > 0 or not math.isfinite(step_v):
            raise InputError.at(where, f"'{key}={tok}': step {step} is not > 0", accepted="a step > 0")
    if b < a:
        raise InputError.at(where, f"'{key}={tok}' is an empty range ({m[2]} < {m[1]})",
                            accepted="a..b with a ≤ b")
    if kind == "int" and (a != int(a) or step_v != int(step_v)):
        raise InputError.at(where, f"'{key}={tok}': '{key}' takes whole numbers", accepted="whole a and step")
    return _Range(a, b, step_v, kind)


def _count(values: list) -> int:
    return sum(v.count() if isinstance(v, _Range) else 1 for v in values)


def _build(text: str, name: str, fields: dict, values: dict[str, list], source: str,
           build: Any = parse_rule) -> RuleGrid:
    expanded = {k: tuple(p for v in vs for p in (v.points() if isinstance(v, _Range) else [v]))
                for k, vs in values.items()}
    points = []
    for combo in itertools.product(*expanded.values()):
        chosen = dict(zip(expanded, combo))
        spec = name + (":" + ",".join(f"{k}={format_value(v)}" for k, v in chosen.items()) if chosen else "")
        points.append((build(spec, source=f"{source} '{text}': point"), chosen))
    return RuleGrid(text, name, expanded, tuple(points))
