"""The worker's own failures to launch a sandbox, told apart from the bot's.

A launch can fail because of the bot (its command cannot run, it crashes, it never serves: a start failure,
counted against the version, three in a row suspend it) or because of the worker (it cannot lock the system
files its sandboxes share, its tmpfs has no room for the standard library's copy, a file of a system tree is
gone since an upgrade). The second kind is ``SandboxFault``: the instance pool lets it through, so the match
fails on this worker and the queue plays it on another (or dead-letters it, naming the fault), and the bot
is charged nothing: a misconfigured worker must not push working bots off the ladder.
"""

from __future__ import annotations

__all__ = ["SandboxFault"]


class SandboxFault(OSError):
    """A sandbox could not be launched for a reason of the worker's own; the message says what and how to
    fix it."""
