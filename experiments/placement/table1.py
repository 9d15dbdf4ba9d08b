"""ICS'22 Table 1: the datasets, reproduced from the registry and generated as stand-ins."""

from harness.registry import register_experiment
from experiments.datasets.tables import DatasetTable


@register_experiment
class DatasetsTable(DatasetTable):
    title = "ICS'22 Table 1: graph datasets (registry + stand-ins)"
