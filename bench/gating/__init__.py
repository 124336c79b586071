"""Prediction-error gating benchmark (see run.py)."""
