"""bench/journey_browser.py reads the reports as dpcore.release_html writes them (the utility table's
AUROCs, the numbers table), and its verdict fails a page that shows another number or a released
value far from the exact one. The browser run itself is the benchmark (minutes of AIM), not a test."""
import importlib.util
from pathlib import Path

SPEC = importlib.util.spec_from_file_location("bench_journey", Path(__file__).parents[1] / "bench" / "journey_browser.py")
bench = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(bench)


def _result():
    from dpcore.evaluate.utility import UtilityResult

    rows = {"logistic_regression": {"auroc": 0.753, "accuracy": 0.879}, "random_forest": {"auroc": 0.805, "accuracy": 0.883}}
    ref = {"classifiers": {"logistic_regression": {"auroc": 0.81, "accuracy": 0.895},
                           "random_forest": {"auroc": 0.812, "accuracy": 0.9}},
           "mean": {"auroc": 0.811, "accuracy": 0.8975}}
    return UtilityResult("table", ("auroc", "accuracy"), rows, {"auroc": 0.779, "accuracy": 0.881}, ref)


def test_the_reports_tables_are_read_as_release_html_writes_them():
    from dpcore.release_html import numbers_table, utility_table

    table = bench._utility_table("<h2>Utility</h2>" + utility_table(_result()))
    assert table["logistic_regression"] == {"auroc (synthetic → real)": 0.753, "auroc (real → real)": 0.81,
                                            "accuracy (synthetic → real)": 0.879, "accuracy (real → real)": 0.895}
    assert table["mean"]["auroc (synthetic → real)"] == 0.779
    nums = bench._report_numbers(numbers_table({"usefulness: balanced accuracy (synthetic → real)": 0.62834,
                                                "usefulness shared in the release (the same number, with noise)":
                                                "0.67 ± 0.04"}))
    assert nums == {"usefulness: balanced accuracy (synthetic → real)": "0.6283",
                    "usefulness shared in the release (the same number, with noise)": "0.67 ± 0.04"}


def _out(shown: str = "0.63", exact: str = "0.6283", shared: str = "0.67 ± 0.04", privacy: str | None = None) -> dict:
    """What the bench reads off the pages and reports: `shown` on each page, `exact` in the private
    report's table, `shared` wherever the released value is."""
    from dpcore.release_html import utility_table

    value, pm = shared.split(" ± ")
    return {"compare": {"value": shown}, "compare_after_release": {"value": shown, "shared": shared},
            "runs_table": {"utility": shown, "after_release": {"utility": shown, "shared (with noise)": shared}},
            "released": {"value": value, "plus_minus": pm}, "shareable_release": {"value": value, "plus_minus": pm},
            "privacy_tile": privacy or shown,
            "private_report": {"table": exact, "table_reference": "0.6448", "table_shared": shared, "sentence": shown,
                               "beside": {"shared": shared, "here": shown},
                               "utility_table": bench._utility_table("<h2>Utility</h2>" + utility_table(_result()))}}


def test_the_verdict_wants_one_number_everywhere_and_the_released_one_within_its_noise():
    ok = bench.verdict(_out())
    assert ok["same_number"] and ok["auroc_within"]
    assert ok["auroc"]["logistic_regression"] == {"synthetic": 0.753, "real": 0.81, "gap": 0.057}
    assert not bench.verdict(_out(privacy="0.64"))["same_number"]  # one page with another number
    assert bench.verdict(_out(shared="0.70 ± 0.04"))["same_number"]  # 0.07 from 0.63: within 2 × 0.04
    assert not bench.verdict(_out(shared="0.75 ± 0.04"))["same_number"]  # 0.12: not the same number with noise
