"""AIM and MST (mbi): ε from the accountant hits the target, rows in the original schema, events,
stop, save/load, and mbi's sampler keeping conditionally independent columns independent."""
import numpy as np
import pandas as pd
import pytest

from dpcore.data.csv import dataset_from_frame
from dpcore.errors import InvalidParameter
from dpcore.models import load_model, make_model
from dpcore.privacy.accountant import epsilon

DELTA = 1e-5


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(0)
    n = 3000
    y = rng.random(n) < 0.2
    frame = pd.DataFrame({
        "age": np.clip(np.round(30 + 15 * y + rng.normal(0, 5, n)), 18, 90).astype(int),
        "income": np.clip(1000 + 800 * y + rng.normal(0, 300, n), 0, 5000),
        "city": np.where(y, "a", rng.choice(["a", "b", "c"], n)),
        "y": np.where(y, "yes", "no")})
    return dataset_from_frame(frame, target="y", types={"age": "integer", "income": "numeric",
                                                        "city": "categorical", "y": "categorical"},
                              bounds={"age": (18, 90), "income": (0, 5000)},
                              categories={"city": ["a", "b", "c"], "y": ["no", "yes"]},
                              nullable={"age": False, "income": False, "city": False})


@pytest.fixture(scope="module")
def mst(table):
    events = []
    m = make_model("mst", epsilon=1.0, iters=200, bins=16)
    m.fit(table, callback=events.append)
    return m, events


def test_mst_epsilon_is_the_accountants_and_hits_the_target(mst, table):
    m, events = mst
    eps = epsilon(m.privacy_ledger(), DELTA)
    assert m.fit_result.epsilon == eps and 0.999 < eps <= 1.0
    kinds = {r.mechanism for r in m.privacy_ledger()}
    assert kinds == {"gaussian", "exponential"}
    assert events and events[-1].epsilon == pytest.approx(eps) and events[-1].step == events[-1].total_steps and len(m.calibration["selected"]) == 3


def test_rows_come_back_in_the_schema_and_keep_the_structure(mst, table):
    m, _ = mst
    s = m.sample(4000, seed=1).to_frame()
    real = table.to_frame()
    assert list(s.columns) == list(real.columns)
    assert s["age"].between(18, 90).all() and (s["age"] == s["age"].round()).all()
    assert s["income"].between(0, 5000).all() and set(s["city"]) <= {"a", "b", "c"}
    assert set(s["y"]) == {"no", "yes"}  # both classes of the target
    assert abs((s["y"] == "yes").mean() - (real["y"] == "yes").mean()) < 0.05
    # the tree keeps the strong y–age dependence
    gap = s.groupby("y")["age"].mean()
    assert gap["yes"] - gap["no"] > 8


def test_save_load_samples_alike(mst, tmp_path):
    m, _ = mst
    m.save(tmp_path)
    back = load_model(tmp_path)
    a, b = m.sample(500, seed=3).to_frame(), back.sample(500, seed=3).to_frame()
    pd.testing.assert_frame_equal(a, b)
    assert epsilon(back.privacy_ledger(), DELTA) == pytest.approx(m.fit_result.epsilon)


def test_aim_hits_the_target_and_stops_cleanly(table):
    m = make_model("aim", epsilon=1.0, rounds=6, round_iters=50, iters=100, bins=16, max_time=60)
    r = m.fit(table)
    assert r.epsilon == epsilon(m.privacy_ledger(), DELTA) and 0.999 < r.epsilon <= 1.0
    assert any(rec.mechanism == "exponential" for rec in m.privacy_ledger())
    stop = make_model("aim", epsilon=1.0, rounds=6, round_iters=50, iters=50, bins=16)
    seen = []
    r2 = stop.fit(table, callback=lambda e: seen.append(e) or len(seen) < 2)
    assert r2.stopped and len(seen) == 2 and r2.epsilon < 1.0
    assert stop.sample(10, seed=0).n == 10


def test_bad_inputs_fail_before_work(digits):
    with pytest.raises(InvalidParameter, match="tables"):
        make_model("mst").fit(digits[0])
    with pytest.raises(InvalidParameter, match="bins"):
        make_model("aim", bins=1)
    with pytest.raises(InvalidParameter, match="finite"):
        make_model("mst", epsilon=float("inf"))


def test_sampler_keeps_conditionally_independent_columns_independent():
    """mbi 1.1's rounding sampler assigned both children of a parent in the same rank order
    (private-pgm PR #145), so a ⟂ b | c came out strongly dependent."""
    from dpcore.models.marginal_base import _draw, _mbi

    mbi = _mbi()
    rng = np.random.default_rng(0)
    n = 20000
    c = rng.integers(0, 2, n)
    a = np.where(c == 1, rng.integers(0, 4, n), rng.integers(0, 2, n))
    b = np.where(c == 1, rng.integers(0, 4, n), rng.integers(2, 4, n))
    dom = mbi.Domain(["a", "b", "c"], [4, 4, 2])
    data = mbi.Dataset({"a": a, "b": b, "c": c}, dom)
    ms = [mbi.LinearMeasurement(np.asarray(data.project(cl).datavector(), float), cl, stddev=1.0)
          for cl in (("a", "c"), ("b", "c"))]
    model = mbi.estimation.MirrorDescent().estimate(dom, ms, known_total=n, iters=300)
    s = _draw(model, n, 5)
    for level in (0, 1):
        rows = s["c"] == level
        joint = np.histogram2d(s["a"][rows], s["b"][rows], bins=[4, 4], range=[[0, 4], [0, 4]])[0]
        p = joint / joint.sum()
        prod = p.sum(1, keepdims=True) * p.sum(0, keepdims=True)
        mi = float(np.sum(np.where(p > 0, p * np.log(np.where(p > 0, p, 1) / np.where(prod > 0, prod, 1)), 0)))
        assert mi < 0.01, (level, mi)


def test_level_groups_merge_noise_level_counts():
    from dpcore.models.marginal_base import level_groups

    sigma = 10.0
    # categories: the levels under 3σ become one (last) code, the others keep their order
    assert level_groups(np.array([500.0, 3.0, 200.0, -8.0, 29.0]), sigma, ordered=False).tolist() == [0, 2, 1, 2, 2]
    assert level_groups(np.array([500.0, 3.0, 200.0]), sigma, ordered=False) is None  # one rare level: nothing to merge
    # ordered: well-measured levels stay alone; thin neighbours join until the run's sum is 3σ√k;
    # an empty tail is one run of its own, not mixed with the thin head
    y = np.array([12.0, 15.0, 20.0, 400.0, 300.0, 2.0, -5.0, 4.0, 1.0])
    code = level_groups(y, sigma, ordered=True)
    assert code.tolist() == [0, 0, 0, 1, 2, 3, 3, 3, 3]
    assert level_groups(np.full(6, 1000.0), sigma, ordered=True) is None


def test_expand_draws_levels_within_their_group():
    from dpcore.models.marginal_base import expand

    merged = {"x": [0, 0, 0, 1, 2, 3, 3, 3, 3]}
    codes = {"x": np.repeat(np.arange(4), 4000), "z": np.arange(16000) % 3}
    out = expand(codes, merged, np.random.default_rng(0))
    assert np.array_equal(out["z"], codes["z"])  # attributes without groups pass through
    x = out["x"]
    assert set(x[:4000]) == {0, 1, 2} and set(x[4000:8000]) == {3} and set(x[8000:12000]) == {4}
    assert set(x[12000:]) == {5, 6, 7, 8}
    assert np.bincount(x[12000:], minlength=9)[5:].min() > 900  # uniform within the group


def test_compression_keeps_a_wide_domain_sharp():
    """A column declared 0–10 000 whose rows lie in 0–500 (100 bins of 100: 95 empty): merging the
    bins the noisy 1-way cannot tell from noise keeps the synthetic column's mass where the rows are,
    where the uncompressed model leaks it over the empty bins (the cps1988 'wage' case)."""
    rng = np.random.default_rng(1)
    n = 4000
    y = rng.random(n) < 0.4
    frame = pd.DataFrame({"w": np.clip(rng.gamma(2.0, 80.0, n) + 100 * y, 0, 500), "y": np.where(y, "a", "b")})
    ds = dataset_from_frame(frame, target="y", types={"w": "numeric", "y": "categorical"},
                            bounds={"w": (0, 10_000)}, categories={"y": ["a", "b"]}, nullable={"w": False})
    share = {True: [], False: []}  # seeded noise: a deterministic test (the tail share is noisy)
    for flag in (True, False):
        for seed in (0, 1, 2):
            m = make_model("mst", epsilon=0.5, iters=200, bins=100, compress=flag, seed=seed,
                           reproducible_noise=True)
            m.fit(ds)
            assert ("0:w:value" in m.merged) == flag
            share[flag].append(float((m.sample(n, seed=0).to_frame()["w"] > 600).mean()))
    assert np.mean(share[True]) < 0.01 and np.mean(share[False]) > 2 * np.mean(share[True]), share


def test_pooled_measurements_keep_the_loss():
    """Two measurements of one clique pool into one whose weighted squared loss differs from theirs
    by a constant (so the same estimate), and mbi's compressed 1-ways stay apart."""
    from mbi.marginal_loss import WeightedQuery

    from dpcore.models.marginal_base import _mbi, pooled

    mbi = _mbi()
    rng = np.random.default_rng(0)
    y1, y2 = rng.normal(50, 5, 6), rng.normal(50, 20, 6)
    ms = [mbi.LinearMeasurement(y1, ("a", "b"), stddev=5.0), mbi.LinearMeasurement(rng.normal(0, 1, 3), ("a",)),
          mbi.LinearMeasurement(y2, ("a", "b"), stddev=20.0),
          mbi.LinearMeasurement(np.ones(2), ("a",), query=WeightedQuery(np.ones(2)))]
    out = pooled(mbi, ms)
    assert [m.clique for m in out] == [("a", "b"), ("a",), ("a",)] and isinstance(out[2].query, WeightedQuery)
    p = out[0]

    def gap(x):
        full = ((y1 - x) ** 2).sum() / 25 + ((y2 - x) ** 2).sum() / 400
        return full - ((np.asarray(p.noisy_measurement) - x) ** 2).sum() / p.stddev ** 2

    assert gap(rng.normal(0, 30, 6)) == pytest.approx(gap(rng.normal(80, 3, 6)))
    assert p.stddev == pytest.approx((1 / 25 + 1 / 400) ** -0.5)


def test_aim_spends_its_budget_on_the_rounds_that_fit_in_max_time(table):
    """Planned T = 2000 rounds cannot run in 20 s: from the second round on, σ is re-planned from the
    pace so far (each round's ρ ≥ 10× the paper's ρ/T; σ halving alone gives at most 4× per round)."""
    m = make_model("aim", epsilon=1.0, rounds=2000, round_iters=20, iters=50, bins=16, max_time=20,
                   target_pairs=False)  # the pacing, not the first measurement, is under test
    r = m.fit(table)
    assert 0.999 < r.epsilon <= 1.0
    rounds = [1 / (2 * rec.noise_multiplier ** 2) for rec in m.privacy_ledger() if rec.name == "aim: marginals"]
    assert len(rounds) >= 2 and rounds[1] > 10 * rounds[0], rounds


def test_workload_weights_favour_the_targets_marginals():
    """AIM's downward-closure weights w_r = Σ_{s ⊇ r} c_s·|r| with c_s = target_weight for the
    target's pairs: (a, T) = 4·2 against (a, b) = 1·2, (T,) = 4 + 4; weight 1 weighs all alike."""
    from dpcore.models.aim import candidates
    from dpcore.models.marginal_data import LABEL

    w = candidates(["a", "b", LABEL], 2, 4.0)
    assert w[("a", LABEL)] == 8 and w[("a", "b")] == 2 and w[(LABEL,)] == 8 and w[("a",)] == 5
    plain = candidates(["a", "b", LABEL], 2)
    assert plain[("a", LABEL)] == plain[("a", "b")] == 2


def _chain_table(n=2000, seed=0):
    """Five columns in a strong chain and a target that depends (weakly, in L1 terms) on x0 alone."""
    rng = np.random.default_rng(seed)
    x = [rng.integers(0, 6, n)]
    for _ in range(4):
        x.append(np.where(rng.random(n) < 0.8, x[-1], rng.integers(0, 6, n)))
    y = rng.random(n) < np.where(x[0] >= 3, 0.35, 0.15)
    frame = pd.DataFrame({f"x{i}": v for i, v in enumerate(x)} | {"y": np.where(y, "yes", "no")})
    return dataset_from_frame(frame, target="y", types={f"x{i}": "integer" for i in range(5)},
                              bounds={f"x{i}": (0, 5) for i in range(5)}, categories={"y": ["no", "yes"]},
                              nullable={f"x{i}": False for i in range(5)})


def test_mst_tree_favours_the_targets_edges_with_target_weight():
    from dpcore.models.marginal_data import LABEL

    ds = _chain_table()
    edges = {}
    for w in (1.0, 16.0):  # seeded noise: a deterministic test of the selection's tilt
        m = make_model("mst", epsilon=1.0, iters=20, target_weight=w, seed=0, reproducible_noise=True)
        r = m.fit(ds)
        assert 0.999 < r.epsilon <= 1.0
        edges[w] = sum(LABEL in e for e in m.calibration["selected"])
    assert edges[16.0] > edges[1.0], edges


def test_aim_measures_the_targets_pairs_first_and_keeps_the_link(table):
    """With a target, target_pairs and target_levels 0, the first measurement is every column's pair
    with the target (ledgered, ε still the target) and the rows keep y's link to age and city."""
    m = make_model("aim", epsilon=1.0, rounds=6, round_iters=50, iters=100, bins=16, max_time=30,
                   target_levels=0)
    r = m.fit(table)
    ledger = m.privacy_ledger()
    assert r.epsilon == epsilon(ledger, DELTA) and 0.999 < r.epsilon <= 1.0
    assert sum(rec.steps for rec in ledger if rec.name == "aim: target pairs") == 3
    assert not any(rec.name == "aim: 1-way marginals" for rec in ledger)
    s = m.sample(4000, seed=0).to_frame()
    gap = s.groupby("y")["age"].mean()
    assert gap["yes"] - gap["no"] > 8 and (s.loc[s["y"] == "yes", "city"] == "a").mean() > 0.8


def test_the_preview_from_facts_plans_the_steps_the_run_will_show():
    """The Train page previews from DataFacts (no rows): AIM said "1 training steps" while its bar
    then counted 66; the facts now carry the table's attribute count (a function of the schema)."""
    import dataclasses
    import json

    from dpcore.data import load_split
    from dpcore.models import get_model
    from dpcore.models.synthesizer import DataFacts

    train, _ = load_split("credit", seed=0, test_size=0.2)
    facts = DataFacts(**json.loads(json.dumps(dataclasses.asdict(DataFacts.of(train)), default=str)))
    for name in ("aim", "mst"):
        cls = get_model(name)
        from_rows, from_facts = cls.plan(cls.config_class(), train), cls.plan(cls.config_class(), facts)
        assert from_facts.steps == from_rows.steps > 2, (name, from_facts.steps, from_rows.steps)
    images, _ = load_split("digits", seed=0, test_size=0.2)
    assert DataFacts.of(images).attributes is None


def test_aim_measures_the_targets_pairs_on_grouped_levels_after_the_1ways(table):
    """Default (target_levels 4): the 1-ways first, then each column's pair with the target on at most
    4 groups of its levels; every measurement is a ledger record, ε is the accountant's and the
    target, and the rows keep y's link to age and city."""
    m = make_model("aim", epsilon=1.0, rounds=8, round_iters=50, iters=100, bins=16, max_time=30)
    r = m.fit(table)
    ledger = m.privacy_ledger()
    assert r.epsilon == epsilon(ledger, DELTA) and 0.999 < r.epsilon <= 1.0
    assert sum(rec.steps for rec in ledger if rec.name == "aim: 1-way marginals") == 4
    assert sum(rec.steps for rec in ledger if rec.name == "aim: target pairs (grouped)") == 3
    assert all(rec.sensitivity == 1.0 for rec in ledger if "grouped" in rec.name)
    one = next(rec.noise_multiplier for rec in ledger if rec.name == "aim: 1-way marginals")
    pair = next(rec.noise_multiplier for rec in ledger if rec.name == "aim: target pairs (grouped)")
    assert pair == pytest.approx(one / np.sqrt(2.0))  # target_budget 2: twice a 1-way's ρ
    s = m.sample(4000, seed=0).to_frame()
    gap = s.groupby("y")["age"].mean()
    assert gap["yes"] - gap["no"] > 8 and (s.loc[s["y"] == "yes", "city"] == "a").mean() > 0.8


def test_grouped_pair_counts_move_by_one_when_a_row_goes():
    """What the grouped measurement publishes before its noise, on neighbouring tables (each row
    removed in turn): one group-and-class count moves by exactly 1, so L2 sensitivity 1 holds."""
    from dpcore.models.target_pairs import level_groups_by_mass, pair_query

    rng = np.random.default_rng(0)
    col, y = rng.integers(0, 10, 200), rng.integers(0, 2, 200)

    def counts(keep):
        x = np.bincount(col[keep] * 2 + y[keep], minlength=20).astype(float)
        return q.matrix @ x

    groups = level_groups_by_mass(np.bincount(col, minlength=10) + rng.normal(0, 5, 10), True, 4)
    q = pair_query(groups, 2)
    full = counts(np.ones(200, bool))
    assert q.matrix.shape == (8, 20) and full.sum() == 200 and q.op_norm_sq() == q.matrix.sum(1).max()
    for i in range(200):
        keep = np.ones(200, bool)
        keep[i] = False
        diff = full - counts(keep)
        assert np.linalg.norm(diff) == 1.0 and diff[groups[col[i]] * 2 + y[i]] == 1.0


def test_level_groups_by_mass_cut_ordered_levels_at_quantiles_and_keep_large_categories():
    from dpcore.models.target_pairs import level_groups_by_mass

    ordered = level_groups_by_mass(np.array([100, 0, 0, 0, 0, 0, 100, 100, 100, 0.0]), True, 4)
    assert list(ordered) == [0, 1, 1, 1, 1, 1, 1, 2, 3, 3]  # neighbours together, 100 rows each
    assert list(level_groups_by_mass(np.array([5, 50, 1, 30, 2.0]), False, 3)) == [2, 0, 2, 1, 2]
    assert list(level_groups_by_mass(np.array([-3, 7, 1.0]), True, 4)) == [0, 1, 2]  # few levels: as is


def test_planned_rounds_pay_for_the_grouped_pairs_only_when_a_target_is_declared():
    """T ≥ the first phase's measurements: d 1-ways + target_budget·(d − 1) grouped pairs (31
    attributes: 31 + 2·30 = 91 > the cap 64); without a target, or with target_levels 0, T = 64."""
    from dpcore.models.aim import AIMConfig, planned_rounds

    assert planned_rounds(AIMConfig(), 31, target=True) == 91
    assert planned_rounds(AIMConfig(), 31, target=False) == 64
    assert planned_rounds(AIMConfig(target_levels=0), 31) == 64
    assert planned_rounds(AIMConfig(target_budget=1.0), 5) == 64  # the cap covers 5 + 4


def test_rounds_leave_out_the_target_pairs_measured_first():
    """The target's pairs (weight 4·2 = 8) are measured before the rounds: offered again they set the
    exponential mechanism's sensitivity to 8 for every pair (weight 2). Left out, the largest weight
    offered is 2; the cell-by-cell design (pairs instead of 1-ways) leaves them out too."""
    from dpcore.models.aim import round_candidates
    from dpcore.models.marginal_data import LABEL

    attrs = ["a", "b", "c", LABEL]
    pairs = [("a", LABEL), ("b", LABEL), ("c", LABEL)]
    cands = round_candidates(attrs, 2, 4.0, [(a,) for a in attrs] + pairs)
    assert set(cands) == {("a", "b"), ("a", "c"), ("b", "c")} and max(cands.values()) == 2
    assert round_candidates(attrs, 2, 4.0, [(a,) for a in attrs])[("a", LABEL)] == 8  # not measured: offered
    assert round_candidates(["a", LABEL], 2, 4.0, [("a", LABEL)]) == {("a", LABEL): 8}  # nothing else left


def test_aim_selects_at_the_sensitivity_of_the_candidates_it_offers(table, monkeypatch):
    """A fit with rounds: every selection runs at sensitivity 2 (the target's pairs, weight 8, were
    measured first and are not offered), picks a pair without the target, and writes one
    exponential record at the ε₀ it used; ε is the accountant's of that ledger."""
    from dpcore.models import marginal_base
    from dpcore.models.marginal_data import LABEL

    seen, select = [], marginal_base._Context.select

    def spy(ctx, scores, epsilon0, sensitivity, record):
        seen.append((epsilon0, sensitivity, len(scores)))
        return select(ctx, scores, epsilon0, sensitivity, record)

    monkeypatch.setattr(marginal_base._Context, "select", spy)
    m = make_model("aim", epsilon=1.0, rounds=12, round_iters=20, iters=50, bins=16, max_time=60)
    r = m.fit(table)
    ledger = m.privacy_ledger()
    assert r.epsilon == epsilon(ledger, DELTA) and 0.999 < r.epsilon <= 1.0
    assert seen and all(s == 2.0 and n <= 3 for _, s, n in seen), seen
    assert all(LABEL not in c for c in m.calibration["selected"])
    used = [rec.epsilon0 for rec in ledger if rec.mechanism == "exponential"]
    assert used == pytest.approx([e for e, _, _ in seen])


def test_shrink_to_independence_keeps_the_margins_and_damps_links_the_noise_explains():
    """A grouped pair (4 groups × 2 classes) at σ = 20: with no link the noisy deviation is mostly
    shrunk away (mean λ ≈ 0.25), a strong link (minority share 5 % → 50 %) is kept (mean λ ≈ 0.94); the
    group and class totals are the noisy ones either way."""
    from dpcore.models.target_pairs import shrink_to_independence

    rng = np.random.default_rng(0)
    flat = np.array([[250, 50]] * 4, float)
    strong = np.array([[285, 15], [240, 60], [200, 100], [150, 150]], float)
    lams = {}
    for name, table_ in (("flat", flat), ("strong", strong)):
        lams[name] = []
        for _ in range(200):
            y = (table_ + rng.normal(0, 20, table_.shape)).ravel()
            out, lam = shrink_to_independence(y, 2, 20.0)
            t, o = y.reshape(4, 2), out.reshape(4, 2)
            assert np.allclose(o.sum(0), t.sum(0)) and np.allclose(o.sum(1), t.sum(1))
            lams[name].append(lam)
    assert np.mean(lams["flat"]) < 0.35 and np.mean(lams["strong"]) > 0.9, {k: np.mean(v) for k, v in lams.items()}


def test_aim_target_shrink_is_post_processing(table):
    """target_shrink on: the same ledger records as without (no privacy cost), ε the accountant's,
    one λ per grouped pair in the calibration; age's strong link to y survives the shrinking."""
    m = make_model("aim", epsilon=1.0, rounds=8, round_iters=20, iters=100, bins=16, max_time=30,
                   target_shrink=True)
    r = m.fit(table)
    ledger = m.privacy_ledger()
    assert r.epsilon == epsilon(ledger, DELTA) and 0.999 < r.epsilon <= 1.0
    assert not any("shrink" in rec.name for rec in ledger)
    lam = m.calibration["target_shrink"]
    assert len(lam) == 3 and all(0.0 <= v <= 1.0 for v in lam) and max(lam) > 0.9, lam
    s = m.sample(4000, seed=0).to_frame()
    gap = s.groupby("y")["age"].mean()
    assert gap["yes"] - gap["no"] > 8


def test_aim_final_share_keeps_rho_for_a_final_re_measurement(table):
    """The default final_share 0.5: the rounds stop with half of the ρ the first measurements left,
    which then re-measures every measured marginal (4 1-ways, 3 grouped target pairs, the selected
    ones); ε is the accountant's and the target. A run saved before the setting loads with 0."""
    from dpcore.models.aim import AIM

    assert AIM.config_class().final_share == 0.5 and AIM.legacy_defaults["final_share"] == 0.0
    m = make_model("aim", epsilon=1.0, rounds=12, round_iters=20, iters=50, bins=16, max_time=60)
    r = m.fit(table)
    ledger = m.privacy_ledger()
    assert r.epsilon == epsilon(ledger, DELTA) and 0.999 < r.epsilon <= 1.0

    def rho(prefixes):  # zCDP ρ of the records named so (an exponential record's σ/Δ is 2/ε₀)
        return sum(rec.steps / (2 * rec.noise_multiplier ** 2) for rec in ledger if rec.name.startswith(prefixes))

    final = [rec for rec in ledger if rec.name.startswith("aim: final")]
    assert sum(rec.steps for rec in final) == 4 + 3 + len(m.calibration["selected"]) > 7, final
    assert rho("aim: final") == pytest.approx(rho(("aim: marginals", "aim: selection")), rel=1e-6)
