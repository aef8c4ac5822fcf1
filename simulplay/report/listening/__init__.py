"""The listening test's page (``simulplay listening-test``): :func:`~.page.write_page`."""

from simulplay.report.listening.page import KEY_FILE, write_page

__all__ = ["KEY_FILE", "write_page"]
