"""XGNN Table 3: the datasets, reproduced from the registry and generated as stand-ins."""

from harness.registry import register_experiment
from experiments.datasets.tables import DatasetTable


@register_experiment
class DatasetsTable(DatasetTable):
    id = "xgnn.table3"
    paper = "xgnn"
    artifact = "table3"
    table_id = "xgnn.table3"
    title = "XGNN Table 3: graph datasets (registry + stand-ins)"
