"""Figures and printed summaries of analysis results."""
