"""Bots and who may add them: the registry of bots and their versions (``registry``), the owner and admin
tokens (``tokens``), the checks of what is registered: names, endpoints, manifests (``inputs``), uploaded
packages (``packages``), trust, the endpoint policy and seeds (``trust``), the operator's limits and quotas
(``limits``), the conformance checks (``conformance``) and the validation of uploads with them
(``validation``), the owners' logs (``botlogs``).

May import ``arena.model``, ``arena.store``, ``arena.sandbox`` and the referee; nothing that plays or rates.
"""
