"""Workflows: orchestration that reads stores and files, calls the library and writes results."""
