"""Grouping: commit policies that turn a revising stream into what is spoken, rules that
turn a stream into groups (both registries), input-limit splitters,
the requests a grouped stream makes, requests files, and condition pairs."""

from simulplay.grouping import commits as _commits  # noqa: F401  (registers the built-in commit policies)
from simulplay.grouping import rules as _rules  # noqa: F401  (registers the built-in rules)
from simulplay.grouping.commit import COMMITS, CommitPolicy, Committed, parse_commit, register_commit, unique_commits
from simulplay.grouping.pairs import parse_pair
from simulplay.grouping.registry import (
    Group,
    Rule,
    canonical_condition,
    parse_rule,
    register_rule,
    unique_rules,
)
from simulplay.grouping.requests import request_signatures, requests_frame, split_requests, stream_requests
from simulplay.grouping.splitter import Splitter

__all__ = ["COMMITS", "CommitPolicy", "Committed", "Group", "Rule", "parse_commit", "register_commit",
           "unique_commits", "Splitter", "canonical_condition", "parse_pair", "parse_rule",
           "register_rule", "request_signatures", "requests_frame", "split_requests", "stream_requests", "unique_rules"]
