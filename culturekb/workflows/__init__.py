"""High-level jobs that the CLI, the API, the notebook and scripts call: load data, build, inspect, review, index,
lookup, predict, calibrate, evaluate.

This package is the jobs layer of docs/architecture.md: the faces (CLI, HTTP) reach builders, retrieval, inference
and evals only through it. One module per kind of job: `data` (read data, build), `kb` (inspect, info, card,
review, index), `retrieve` (augmenter, lookup, compare, predict), `calibrate`, `evaluate` (the one eval job that
builds any registered benchmark runner from its run spec).
"""

from culturekb.workflows.build import build_from_files
from culturekb.workflows.calibrate import calibrate_augmenter, calibrate_kb
from culturekb.workflows.data import (
    check_data_file,
    check_run_out,
    demo_data_files,
    load_data,
    load_kb_samples,
)
from culturekb.workflows.evaluate import (
    JobContext,
    build_ricevl_cue_kb,
    eval_command,
    eval_names,
    run_benchmark,
    runner_tables,
)
from culturekb.workflows.kb import (
    IndexSummary,
    KBInspection,
    apply_review,
    export_review,
    index_kb,
    inspect_kb,
    kb_card,
    kb_info,
    render_build_report,
)
from culturekb.workflows.retrieve import (
    ComparisonPage,
    LookupRow,
    compare_kb,
    kb_label_prior,
    lookup_concepts,
    open_augmenter,
    predict_job,
)
from culturekb.workflows.review import apply_review_ledger, import_review, review_status

__all__ = [
    "KBInspection",
    "IndexSummary",
    "LookupRow",
    "load_data",
    "load_kb_samples",
    "check_data_file",
    "check_run_out",
    "build_from_files",
    "inspect_kb",
    "kb_info",
    "kb_card",
    "apply_review",
    "export_review",
    "import_review",
    "apply_review_ledger",
    "review_status",
    "render_build_report",
    "demo_data_files",
    "index_kb",
    "open_augmenter",
    "lookup_concepts",
    "compare_kb",
    "ComparisonPage",
    "kb_label_prior",
    "predict_job",
    "calibrate_kb",
    "calibrate_augmenter",
    "JobContext",
    "run_benchmark",
    "build_ricevl_cue_kb",
    "eval_names",
    "eval_command",
    "runner_tables",
]
