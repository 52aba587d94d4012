"""Evaluation: replaying conversations under strategies, what-ifs at a stored turn, probe
scoring, and reproducing how a conversation was recorded."""
