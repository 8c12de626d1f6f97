"""Peer programs the connection tests start as subprocesses."""
