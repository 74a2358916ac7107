"""Session helpers shared by the workbench pages: the active dataset, the live run, cached results.

Why a package: every page needs the same few things (which data is selected, where runs are
stored, "is my run still training?", formatting ε for people), and keeping them here keeps the pages
to widgets and layout. No training or evaluation maths lives here — numbers come from dpcore.
Pages use `from dpcore import ui` and the names below; each lives in the module of its concept:

- `nav`: navigation guard, error display (`guard`), runs root, upload limit, ε / time formatting
- `data`: the session's data choice, loading it (cached), CSV uploads
- `defaults`: the dataset the app opens on, its demo rows, the ε and epochs for its size
- `persist`: settings that survive a page change (kept widget values) and a reload (the URL)
- `forms`: the Train page's settings widgets, model facts, the model's plan (noise preview)
- `live`: the session's live run and ε sweep, the sidebar status line
- `cache`: per-run cached bundle and evaluations (keyed by run name + mtime)
- `picker`: listing and choosing saved runs, their saved scores
- `coverage`: what ε covers (Privacy page panel) and a model's own claim beside ε = ∞
- `signin`, `workspace`: class mode — who is signed in, their workspace, the runs they look at

Only this package imports Streamlit; torch and the models load inside the helpers that need them,
so the first page paints quickly.
"""
from dpcore.ui.cache import (
                             attack_estimate_seconds,
                             attacks,
                             bundle,
                             cached_marginals,
                             cached_utility,
                             canary_audit,
                             fit_warnings,
                             key,
                             latent,
                             one_way,
                             report_html,
                             run_mtime,
                             samples,
                             synthetic_csv,
                             synthetic_warnings,
)
from dpcore.ui.coverage import model_claim, what_eps_covers
from dpcore.ui.data import (
                             data_choice,
                             data_config_fields,
                             data_label,
                             default_data_choice,
                             load_data,
                             parse_table,
                             parse_upload,
                             save_upload,
                             set_data_choice,
                             table_gone,
)
from dpcore.ui.defaults import (
                             dataset_why,
                             default_dataset,
                             demo_rows,
                             fallback_note,
                             model_defaults,
                             public_size,
                             size_defaults,
)
from dpcore.ui.forms import (
                             DEFAULT_MODEL,
                             EPSILON_CHOICES,
                             coerce_param,
                             config_fields,
                             config_widget,
                             data_facts_json,
                             default_delta,
                             model_info,
                             plan_preview,
                             recommended_model,
                             remember_params,
                             remembered_params,
)
from dpcore.ui.live import (
                             POLL_SECONDS,
                             LiveRun,
                             eta_seconds,
                             live_run,
                             set_live_run,
                             set_sweep_state,
                             sidebar_status,
                             sweep_state,
)
from dpcore.ui.nav import EPSILON_EXPLAINER, TRAINING_NOTES, fmt_eps, fmt_seconds, guard, runs_root, upload_limit_bytes
from dpcore.ui.persist import keep_widgets, read_url, restore_widgets, url_notes, write_url
from dpcore.ui.picker import (
                             ceiling_pairs,
                             choose_runs,
                             headline_missing,
                             model_runs,
                             run_picker,
                             run_summaries,
                             utility_points,
)
from dpcore.ui.signin import current_member
from dpcore.ui.workspace import read_only, view_root

__all__ = [
    "current_member", "read_only", "view_root",
    "DEFAULT_MODEL", "model_defaults", "dataset_why", "default_dataset", "demo_rows", "fallback_note", "public_size", "size_defaults",
    "keep_widgets", "read_url", "restore_widgets", "url_notes", "write_url", "EPSILON_CHOICES", "EPSILON_EXPLAINER", "POLL_SECONDS", "TRAINING_NOTES",
    "LiveRun", "attack_estimate_seconds", "attacks", "bundle", "canary_audit", "ceiling_pairs", "choose_runs", "coerce_param",
    "config_fields", "config_widget", "data_choice", "data_config_fields", "data_facts_json", "data_label",
    "default_data_choice", "default_delta", "eta_seconds", "fmt_eps", "fmt_seconds", "guard", "headline_missing", "key",
    "latent", "run_summaries", "live_run", "load_data", "cached_marginals", "model_info", "model_runs", "one_way",
    "parse_table", "parse_upload", "plan_preview", "recommended_model",
    "remember_params", "remembered_params", "report_html", "run_mtime", "run_picker", "runs_root", "samples",
    "save_upload", "set_data_choice", "table_gone", "set_live_run", "set_sweep_state", "sidebar_status", "sweep_state",
    "synthetic_csv", "synthetic_warnings", "fit_warnings", "upload_limit_bytes", "cached_utility", "utility_points", "model_claim", "what_eps_covers",
]
