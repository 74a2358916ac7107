"""Accountant internals: RDP (reference), the paper's sequential baseline, PLD, and calibration.

Import from `dpcore.privacy.accountant` (the public facade), not from these modules.
"""
