"""Grouping: rules that turn a stream into groups (a registry), input-limit splitters,
the requests a grouped stream makes, requests files, and condition pairs."""

from simulplay.grouping import frameworks as _frameworks  # noqa: F401  (registers the framework rules)
from simulplay.grouping import rules as _rules  # noqa: F401  (registers the built-in rules)
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

__all__ = ["Group", "Rule", "Splitter", "canonical_condition", "parse_pair", "parse_rule",
           "register_rule", "request_signatures", "requests_frame", "split_requests", "stream_requests", "unique_rules"]
