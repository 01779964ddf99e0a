"""Gold labels (group "label_validation"): the sample handed to human annotators and the labels they return.

- `gold_annotation_sample`: a stratified random sample of labeled prompts with their top candidate tasks, as CSV
  for annotators (docs/gold_labels.md); `gold_task_labels`: their CSVs read back from data/raw/gold_labels/.
  Unpartitioned, downstream of the benchmark tables (the analysis refresh job), as the rest of the group
  (assets/label_validation.py, which validates the labelers against these labels).
"""

import polars as pl
from dagster import AssetExecutionContext, AssetIn, Config, MetadataValue, asset

from assets import TABLE_KINDS
from assets.release_gate import refuse_missing_tables
from models import validation as val
from models.benchmarks import PROMPTS_SCHEMA
from resources.dagster_resources import Warehouse
from resources.export_files import write_csv
from resources.readers import gold_files, read_gold_csv
from resources.source_versions import GOLD_DIR_NAME, GOLD_FILES_KEY
from resources.sources import raw_dir

VALIDATION_GROUP = "label_validation"
ANNOTATION_FILE = "gold_annotation_sample.csv"


class AnnotationSampleConfig(Config):
    per_benchmark: int = 20
    top_k: int = 10
    seed: int = 0


# benchmark_prompts without its bookkeeping columns (one schema: models.benchmarks.PROMPTS_SCHEMA)
PROMPT_COLUMNS: dict[str, pl.DataType] = {
    column: dtype for column, dtype in PROMPTS_SCHEMA.items() if column not in ("sector", "extra", "line_number")
}
# What validate_labels and other_labelers_labels read of a prompt: no prompt text.
VALIDATION_PROMPT_COLUMNS = (
    "benchmark",
    "prompt_id",
    "prompt_hash",
    "occupation",
    "onet_soc_code",
    "onet_task_id",
    "onet_task",
)
# What annotation_rows reads of a label.
ANNOTATION_LABEL_COLUMNS = ("benchmark", "prompt_id", "labeler", "rank", "task_id", "onet_soc_code")


def read_prompts(warehouse: Warehouse, columns: tuple[str, ...] | None = None) -> pl.DataFrame:
    """benchmark_prompts, only `columns` of it (default: all of PROMPT_COLUMNS, texts included)."""
    return warehouse.prompt_columns({c: PROMPT_COLUMNS[c] for c in (columns or PROMPT_COLUMNS)})


def _annotation_inputs(warehouse: Warehouse, keys: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The sampled prompts (keys order; benchmark, prompt_id, prompt_hash, prompt) and their labels
    (ANNOTATION_LABEL_COLUMNS, table order): only the sample's texts and labels are loaded."""
    texts = warehouse.prompt_texts(keys)
    labels = warehouse.labels_of_keys(keys, ANNOTATION_LABEL_COLUMNS)
    sample = keys.select("benchmark", "prompt_id").join(
        texts, on=["benchmark", "prompt_id"], how="left", maintain_order="left"
    )
    return sample, labels


@asset(
    group_name=VALIDATION_GROUP,
    kinds=TABLE_KINDS,
    ins={"onet_tasks": AssetIn(), "onet_occupations": AssetIn()},
    deps=["prompt_task_labels", "prompt_work", "benchmark_prompts"],
    description="A stratified random sample of labeled prompts (per benchmark) with their top candidate "
    "tasks, "
    "written as CSV to data/warehouse/annotation/ for human annotators (docs/gold_labels.md).",
)
def gold_annotation_sample(
    context: AssetExecutionContext,
    config: AnnotationSampleConfig,
    warehouse: Warehouse,
    onet_tasks: pl.DataFrame,
    onet_occupations: pl.DataFrame,
) -> pl.DataFrame:
    # no labels yet: a failure naming them, not an empty sheet for the annotators reported as a success
    refuse_missing_tables(warehouse, "gold_annotation_sample", ["prompt_task_labels"])
    # Draw from the keys of the labeled prompts (the same draw as val.annotation_sample over full rows), then
    # load texts and labels of the sampled prompts only.
    keys = val.annotation_sample_keys(
        warehouse.annotation_pool(), per_benchmark=config.per_benchmark, seed=config.seed
    )
    if keys.is_empty():  # nothing labeled yet
        sample = pl.DataFrame(schema={c: pl.Utf8 for c in val.ANNOTATION_COLUMNS})
    else:
        chosen, labels = _annotation_inputs(warehouse, keys)
        sample = val.annotation_rows(chosen, labels, onet_tasks, onet_occupations, top_k=config.top_k)
    path = write_csv(warehouse.annotation_dir() / ANNOTATION_FILE, sample)
    context.add_output_metadata(
        {
            "csv_path": MetadataValue.path(str(path)),
            "n_prompts": sample.height,
            "per_benchmark": MetadataValue.json(
                dict(sample.group_by("benchmark").len().sort("benchmark").iter_rows())
            ),
            "import_to": str(raw_dir() / GOLD_DIR_NAME / "<annotator>.csv"),
        }
    )
    return sample


@asset(
    group_name=VALIDATION_GROUP,
    kinds=TABLE_KINDS,
    ins={"onet_tasks": AssetIn()},
    deps=["benchmark_prompts", GOLD_FILES_KEY],  # GOLD_FILES_KEY: it reads data/raw/gold_labels/
    description="Human gold task labels imported from `data/raw/gold_labels/*.csv` (docs/gold_labels.md): "
    "benchmark, prompt_id, task_id (null = no O*NET task fits), annotator, source file and line. "
    "Empty when no file is there.",
)
def gold_task_labels(
    context: AssetExecutionContext, warehouse: Warehouse, onet_tasks: pl.DataFrame
) -> pl.DataFrame:
    folder = raw_dir() / GOLD_DIR_NAME
    files = gold_files(folder)
    if not files:
        message = (
            f"no gold label files in {folder}: export a sample with gold_annotation_sample, have it "
            "annotated, and place the CSVs there (docs/gold_labels.md)"
        )
        context.log.info(message)
        context.add_output_metadata({"message": message, "n_files": 0, "n_prompts": 0})
        return pl.DataFrame(schema=val.GOLD_SCHEMA)
    raw = pl.concat([read_gold_csv(f) for f in files])
    gold, notes = val.resolve_gold(raw, read_prompts(warehouse, ("benchmark", "prompt_id")), onet_tasks)
    if notes.get("gold_unknown_prompts"):
        context.log.warning(
            f"{len(notes['gold_unknown_prompts'])} gold prompts are not in benchmark_prompts "
            f"and were dropped: {notes['gold_unknown_prompts'][:10]}"
        )
    context.add_output_metadata(
        {
            "n_files": len(files),
            "files": ", ".join(f.name for f in files),
            "n_prompts": notes.get("gold_prompts", 0),
            "n_rows": gold.height,
            "unknown_prompts_dropped": len(notes.get("gold_unknown_prompts", [])),
        }
    )
    return gold
