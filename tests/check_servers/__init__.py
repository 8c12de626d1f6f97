"""Servers with one deliberate defect each, for the tests of ``mcpspec check``."""
