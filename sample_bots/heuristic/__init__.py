"""The heuristic sample bot: sensible bidding, declarations, belote and card play for the whole family."""

from sample_bots.heuristic.bot import HeuristicBot

__all__ = ["HeuristicBot"]
