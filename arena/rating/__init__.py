"""What the results say about the bots: openskill team ratings, the leaderboard and history (``ratings``),
the Bradley–Terry batch rating (``bradley_terry``, ``batch``), the sequential test (``sprt``) and the gates of
new versions that use it (``gating``), the per-bot statistics (``stats``).

May import ``arena.model``, ``arena.store`` and ``arena.bots``; nothing that schedules or plays matches.
"""
