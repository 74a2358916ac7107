"""dpcore: differentially private generative models, privacy accounting and evaluation.

Layers (imports point down only): cli → runs → evaluate → models → privacy → data.
"""
__version__ = "0.1.0"
