"""Peers of the stdio benchmark (``bench/stdio.py``): echo servers and client drivers."""
