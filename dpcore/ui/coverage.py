"""Privacy-page panels that say what ε covers: the catalogue, and a model's own claim beside ε = ∞.

Why here: the labels come from `dpcore.privacy.coverage` and the model's `privacy_claim()` (L-VAE's
scoped certificate), so the page, the CLI and the reports say the same; the page calls each panel
in one line and never asks for a model by name.
"""
from __future__ import annotations

import streamlit as st


def what_eps_covers(private: bool, preprocessing_private: bool = True, seeded_noise: bool = False) -> None:
    """A short "What ε covers" panel: the neighbouring relation, covered outputs, the rest; a run with
    reproducible (seeded) noise gets a warning above it and covers nothing."""
    from dpcore.privacy import coverage

    if seeded_noise:
        st.error(f"**{coverage.NOT_PRIVATE.capitalize()}.** {coverage.SEEDED_EXPLAINER}",
                 icon=":material/lock_open:")
    with st.expander("What ε covers"):
        st.caption(coverage.NEIGHBOURING)
        if seeded_noise:
            st.markdown("**Nothing is covered**: the noise is reproducible from the seed.")
        elif private:
            st.markdown("**Covered by ε** (safe to share):\n" + "".join(
                f"\n- {o.label} — {o.why}" for o in coverage.covered()))
        else:
            st.markdown("**ε = ∞**: this model was trained without differential privacy, so no output is covered.")
        st.markdown("**Not covered** (data owner only):\n" + "".join(
            f"\n- {o.label} — {o.why}" for o in coverage.not_covered()))
        if not preprocessing_private:
            st.caption("This run's preprocessing read bounds or categories from the raw data: even the "
                       "covered outputs depend on them.")


def model_claim(claim: dict) -> None:
    """A non-private model's own claim (`privacy_claim()`): ε = ∞ for every release, the claim's
    summary of what it covers, the claim itself in an expander."""
    st.metric("ε", "∞", help="Everything the workbench releases from this model: it is trained "
                              "without differential privacy")
    st.warning(claim["summary"], icon=":material/lock_open:")
    with st.expander(claim.get("label") or "The model's claim"):
        st.json({k: v for k, v in claim.items() if k not in ("summary", "label")}, expanded=False)
