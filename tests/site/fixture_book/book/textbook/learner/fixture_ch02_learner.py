"""Fixture learner file for chapter 2: nothing but data."""

PRICES = {"vanilla": 250, "chocolate": 275}
