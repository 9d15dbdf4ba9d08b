"""XGNN Table 3: the datasets, reproduced from the registry and generated as stand-ins."""

from harness.registry import register_experiment
from experiments.datasets.tables import DatasetTable


@register_experiment
class DatasetsTable(DatasetTable):
    title = "XGNN Table 3: graph datasets (registry + stand-ins)"
