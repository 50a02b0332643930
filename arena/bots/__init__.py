"""Bots and who may add them: the registry of bots and their versions (``registry``; their failed starts, forfeits
and suspension: ``suspension``), the bot, owner and admin tokens (``tokens``), the owners the operator adds
(``owners``), the checks of what is registered: names, endpoints, manifests (``inputs``), uploaded packages
(``packages``), trust, the endpoint policy and seeds (``trust``), the operator's limits and quotas (``limits``),
the conformance checks (``conformance``; their results and words: ``check_report``), a bot on its author's
machine as ``arena check-bot`` starts it (``local``) and the validation of uploads with the checks
(``validation``, which ``arena check-bot --sandbox`` runs too), the owners' logs (``botlogs``).

May import ``arena.model``, ``arena.store``, ``arena.sandbox`` and the referee; nothing that plays or rates.
"""
