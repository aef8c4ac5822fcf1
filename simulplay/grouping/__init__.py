"""Grouping: rules that turn a stream into groups, and input-limit splitters."""

from simulplay.grouping import rules as _rules  # noqa: F401  (registers the built-in rules)
from simulplay.grouping.registry import (
                                         Group,
                                         Rule,
                                         canonical_condition,
                                         known_rules,
                                         parse_rule,
                                         register_rule,
                                         unique_rules,
)
from simulplay.grouping.requests import requests_frame, split_requests, stream_requests
from simulplay.grouping.splitter import Splitter

__all__ = ["Group", "Rule", "Splitter", "canonical_condition", "known_rules", "parse_rule",
           "register_rule", "requests_frame", "split_requests", "stream_requests", "unique_rules"]
