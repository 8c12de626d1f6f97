"""The coverage-guided target: libFuzzer (through atheris) mutates bytes towards new
branches of ``mcpspec.runtime`` (the codec and the receive path of the sessions).

Run as ``python -m tests.fuzzing.atheris_target FINDINGS.jsonl [libFuzzer flags]``. Each
input goes to ``codec.decode`` of one revision and to ``receive`` of a server session
(after the 2025-11-25 handshake, after the 2025-03-26 one: batches, or stateless),
chosen by the input's first byte, with the invariants of :mod:`.driver` checked. A
broken invariant is written to ``FINDINGS.jsonl`` (first input of each kind, then a
count) instead of stopping the run, so one escape does not hide the next; with
``MCPSPEC_FUZZ_CRASH=1`` it raises instead and libFuzzer saves the input.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from typing import Any

import atheris  # type: ignore[import-untyped]

# Instrument the runtime before anything imports it: the revision modules import it too.
with atheris.instrument_imports(include=["mcpspec.runtime"]):
    import mcpspec
    import mcpspec.runtime.codec
    import mcpspec.runtime.session.server

from .driver import Problem, check_decode, check_receive, signature
from .engine import REUSE
from .states import STATES, Session, State

__all__ = ["main"]

_STATES: tuple[State, ...] = tuple(
    s for s in STATES if s.name in ("server 2025-11-25", "server 2025-03-26", "server 2026-07-28")
)
_CODECS = [mcpspec.codec(r) for r in mcpspec.REVISIONS]


class _Target:
    """The per-process state of the run: live sessions and what was found."""

    def __init__(self, findings_path: str) -> None:
        self.path = findings_path
        self.sessions: dict[str, tuple[Session, tuple[Any, ...], int]] = {}
        self.seen: dict[tuple[str, ...], int] = {}
        self.runs = 0
        self.crash = os.environ.get("MCPSPEC_FUZZ_CRASH") == "1"

    def session(self, state: State) -> Session:
        found = self.sessions.get(state.name)
        if found is not None and found[2] < REUSE:
            self.sessions[state.name] = (found[0], found[1], found[2] + 1)
            return found[0]
        session = state.build()
        self.sessions[state.name] = (session, signature(session), 1)
        return session

    def report(self, problem: Problem, target: str, data: bytes) -> None:
        if self.crash:
            raise AssertionError(f"{target}: {problem}")
        key = (target.split(" ")[0], *problem.key)
        count = self.seen.get(key, 0) + 1
        self.seen[key] = count
        if count == 1 or count % 1000 == 0:
            record = {
                "key": list(key),
                "count": count,
                "target": target,
                "kind": problem.kind,
                "exception": problem.exception,
                "where": problem.where,
                "detail": problem.detail,
                "input": base64.b64encode(data[:4096]).decode(),
                "size": len(data),
            }
            with open(self.path, "a", encoding="utf-8") as out:
                out.write(json.dumps(record) + "\n")

    def counts(self) -> None:
        """Write the counts so far beside the findings (libFuzzer ends the process
        without Python's exit handlers)."""
        snapshot = {"runs": self.runs, "counts": [[*k, n] for k, n in self.seen.items()]}
        with open(self.path + ".counts", "w", encoding="utf-8") as out:
            json.dump(snapshot, out)

    def __call__(self, data: bytes) -> None:
        self.runs += 1
        if self.runs % 2048 == 0:
            self.counts()
        selector = data[0] if data else 0
        codec = _CODECS[selector % len(_CODECS)]
        problem = check_decode(codec, data)
        if problem is not None:
            self.report(problem, f"codec {codec.revision}", data)
        state = _STATES[(selector >> 4) % len(_STATES)]
        session = self.session(state)
        problems, used_up = check_receive(session, data, self.runs)
        for found in problems:
            self.report(found, state.name, data)
        if used_up or signature(session) != self.sessions[state.name][1]:
            del self.sessions[state.name]


def main() -> None:
    """``FINDINGS.jsonl`` then libFuzzer's own arguments."""
    findings = sys.argv[1]
    target = _Target(findings)
    target.counts()
    atheris.Setup([sys.argv[0], *sys.argv[2:]], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
