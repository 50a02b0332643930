"""Bots and who may add them: the registry of bots, versions and tokens (``registry``), uploaded packages
(``packages``), trust, the endpoint policy and seeds (``trust``), the operator's limits and quotas (``limits``),
the conformance checks (``conformance``) and the validation of uploads with them (``validation``), the owners'
logs (``botlogs``).

May import ``arena.model``, ``arena.store``, ``arena.sandbox`` and the referee; nothing that plays or rates.
"""
