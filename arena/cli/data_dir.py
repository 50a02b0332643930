"""What ``arena up`` keeps in its data dir, which the other commands read: the state file (the addresses of
a running arena), the lock that makes it one ``arena up`` per directory, the admin token and the
registration key (mode 0600); and ``matches/`` and ``series/``, where ``arena match`` and ``arena series``
write a record no ``--out`` placed.

No command group of its own: ``stack`` writes these files, ``client`` reads them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

STATE_FILE = "arena-up.json"
LOCK_FILE = "arena-up.lock"
TOKEN_FILE = "admin-token"
REGISTRATION_KEY_FILE = "registration-key"
DEFAULT_DATA_DIR = "var/arena"
MATCHES_DIR = "matches"
SERIES_DIR = "series"


def read_state(data_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """``arena up``'s state file, or None if there is none (or it is unreadable)."""
    try:
        data = json.loads((Path(data_dir) / STATE_FILE).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
