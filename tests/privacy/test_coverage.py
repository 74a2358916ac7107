"""The catalogue of what ε covers: every output kind classified once, non-private runs cover nothing."""
from dpcore.privacy import coverage


def test_catalogue_classifies_every_release_kind_once():
    keys = [o.key for o in coverage.CATALOGUE]
    assert len(keys) == len(set(keys))
    cov = {o.key for o in coverage.covered()}
    assert cov == {"synthetic_rows", "model_weights", "ledger", "noisy_statistics", "config", "released_score"}
    assert {"real_rows", "raw_losses", "real_evaluation", "attack_statistics", "posterior_resamples",
            "row_counts"} <= {o.key for o in coverage.not_covered()}
    assert all(o.why and o.label for o in coverage.CATALOGUE)


def test_run_coverage_private_and_not():
    dp = coverage.run_coverage(True)
    assert dp["covered_by_epsilon"] == [o.key for o in coverage.covered()]
    assert set(dp["covered_by_epsilon"]).isdisjoint(dp["not_covered"])
    assert "adding or removing one row" in dp["neighbouring"]
    plain = coverage.run_coverage(False, preprocessing_private=False)
    assert plain["covered_by_epsilon"] == [] and len(plain["not_covered"]) == len(coverage.CATALOGUE)
    assert plain["preprocessing_covered"] is False


def test_the_catalogue_says_how_settings_and_the_split_stay_functions_of_public_facts():
    """Settings are covered because size-dependent auto values come from ñ (not 'chosen by the user,
    not computed from the rows', which auto epochs and the small-table batch were not)."""
    from dpcore.privacy.coverage import BY_KEY, NEIGHBOURING

    assert "released noisy count" in BY_KEY["config"].why and "never from the exact rows" in BY_KEY["config"].why
    assert "keyed hash" in NEIGHBOURING and not BY_KEY["split_key"].covered
