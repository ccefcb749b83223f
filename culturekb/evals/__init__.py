"""Evaluation: metrics (pure functions), report writers, and the one `Runner` base for every benchmark.

The generic label metrics are re-exported here; the statistics are in `culturekb.evals.stats`, and a benchmark's
own metrics in its package (`culturekb.evals.cedar`, `culturekb.evals.ricevl`).

Importing this package does not import matplotlib; plots import it when they are drawn.
"""

from culturekb.evals.metrics import (
    INVALID,
    ConfusionMatrix,
    accuracy,
    accuracy_by_group,
    accuracy_grid,
    align_predictions,
    confusion_matrix,
    cross_lingual_variance,
    macro_average,
    majority_baseline_accuracy,
    majority_labels,
    mean_by_group,
    mean_score,
    rank_average,
    spearman,
    spearman_agreement,
    western_group,
)
from culturekb.evals.reports import (
    BarPlot,
    Cell,
    HeatmapPlot,
    Plot,
    ReportFiles,
    Table,
    render_markdown_table,
    to_jsonable,
    write_report,
)
from culturekb.evals.runner import (
    CHECKPOINT_FILE,
    PREDICTIONS_FILE,
    Runner,
    RunnerCommand,
    RunResult,
    Setting,
    get_runner,
    list_runners,
    register_runner,
)

__all__ = [
    # metrics
    "INVALID",
    "ConfusionMatrix",
    "accuracy",
    "accuracy_by_group",
    "accuracy_grid",
    "align_predictions",
    "confusion_matrix",
    "cross_lingual_variance",
    "macro_average",
    "majority_baseline_accuracy",
    "majority_labels",
    "mean_by_group",
    "mean_score",
    "rank_average",
    "spearman",
    "spearman_agreement",
    "western_group",
    # reports
    "BarPlot",
    "Cell",
    "HeatmapPlot",
    "Plot",
    "ReportFiles",
    "Table",
    "render_markdown_table",
    "to_jsonable",
    "write_report",
    # runner
    "CHECKPOINT_FILE",
    "PREDICTIONS_FILE",
    "RunResult",
    "Runner",
    "RunnerCommand",
    "Setting",
    "get_runner",
    "list_runners",
    "register_runner",
]
