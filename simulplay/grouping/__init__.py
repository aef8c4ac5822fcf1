"""Grouping: commit policies that turn a revising stream into what is spoken (a registry),
rules that turn a stream into groups (a registry), policies that decide while
their output plays and the engine that runs them, input-limit splitters, the requests a
grouped stream makes, requests files, and condition pairs."""

from simulplay.grouping import commits as _commits  # noqa: F401  (registers the built-in commit policies)
from simulplay.grouping import frameworks as _frameworks  # noqa: F401  (registers the framework rules)
from simulplay.grouping import policies as _policies  # noqa: F401  (registers the built-in policies)
from simulplay.grouping import rules as _rules  # noqa: F401  (registers the built-in rules)
from simulplay.grouping.commit import COMMITS, CommitPolicy, Committed, parse_commit, register_commit, unique_commits
from simulplay.grouping.engine import LoopResult, Served, fixed_provider, run_policy
from simulplay.grouping.pairs import parse_pair
from simulplay.grouping.policy import Decision, Observation, Policy, as_policy, is_closed_loop
from simulplay.grouping.registry import (
    Committing,
    Group,
    Rule,
    canonical_condition,
    commit_rules,
    parse_rule,
    register_rule,
    revising_allowed,
    unique_rules,
)
from simulplay.grouping.requests import request_signatures, requests_frame, split_requests, stream_requests
from simulplay.grouping.splitter import Splitter

__all__ = ["COMMITS", "CommitPolicy", "Committed", "Committing", "commit_rules", "parse_commit", "register_commit",
           "unique_commits",
           "Decision", "Group", "LoopResult", "Observation", "Policy", "Rule", "Served", "Splitter", "as_policy",
           "canonical_condition", "fixed_provider", "is_closed_loop", "parse_pair", "parse_rule", "register_rule",
           "request_signatures", "requests_frame", "run_policy", "split_requests", "stream_requests", "unique_rules",
           "revising_allowed"]
