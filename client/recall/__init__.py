"""Recall: ranking, SQL pools, stemming, the startup context."""
