"""The registry holds every dataset the four papers use, with its published numbers."""

from __future__ import annotations

import pytest

from harness.datasets import get, list_datasets, resolve
from harness.datasets.registry import PAPERS, normalize, table_ids
from harness.errors import HarnessError

# Every dataset the papers name, by the name the paper uses -> registry entry.
PAPER_NAMES = {
    "ogbn-products": "ogbn-products", "products": "ogbn-products", "PRODUCTS": "ogbn-products",
    "ogbn-papers100M": "ogbn-papers100M", "PA": "ogbn-papers100M", "PAPERS": "ogbn-papers100M",
    "OGB-Papers": "ogbn-papers100M", "papers100M": "ogbn-papers100M",
    "ogbn-arxiv": "ogbn-arxiv", "ARXIV": "ogbn-arxiv",
    "ogbn-proteins": "ogbn-proteins",
    "MAG240M": "mag240m",
    "reddit": "reddit", "yelp": "yelp", "CORA": "cora", "mggcn-cora": "citeseer",
    "Friendster": "friendster", "CF": "com-friendster",
    "TW": "twitter-2010", "Twitter-2010": "twitter-2010",
    "UK": "uk-2006-05", "UK-2006-05": "uk-2006-05",
    "UK_domain": "uk-2007-05", "uk-2007": "uk-2007-05", "uk-2007-05": "uk-2007-05",
    "reddit-dgl": "reddit-dgl", "protein-hipmcl": "protein-hipmcl", "citeseer": "citeseer",
}


@pytest.mark.parametrize("name,canonical", list(PAPER_NAMES.items()))
def test_every_paper_name_resolves(name, canonical):
    assert resolve(name) == canonical


def test_density_sweep_has_all_eight_factors_at_fixed_nodes():
    sweep = [s for s in list_datasets() if s.sweep == "bter-arxiv"]
    factors = sorted(int(s.name.rsplit("-x", 1)[1]) for s in sweep)
    assert factors == [1, 2, 4, 8, 16, 32, 64, 128]
    assert {s.nodes for s in sweep} == {169343}
    base = get("1x").edges
    for s in sweep:
        k = int(s.name.rsplit("-x", 1)[1])
        assert s.edges == k * base
        assert s.feature_dim == 512 and s.num_classes == 40 and s.random_features
    assert get("128x").name == "bter-arxiv-x128"


def test_published_numbers_spot_checks():
    products = get("products")
    assert (products.nodes, products.edges, products.directed) == (2449029, 61859140, False)
    assert (products.feature_dim, products.num_classes) == (100, 47)
    assert (products.split.train, products.split.valid, products.split.test) == (196615, 39323, 2213091)
    papers = get("PA")
    assert (papers.nodes, papers.edges, papers.directed) == (111059956, 1615685872, True)
    assert papers.standin.stored_edges == 3228124712  # WholeGraph: "3.2B" after symmetrizing
    mag = get("MAG240M")
    assert (mag.nodes, mag.feature_dim, mag.feature_dtype) == (121751666, 768, "float16")
    assert get("CF").standin.stored_edges == 2 * get("CF").edges == 3612134270
    assert get("UK_domain").nodes == 105153952


def test_random_feature_datasets_are_marked():
    # WholeGraph and XGNN say these have no features and generate random ones.
    for name in ("friendster", "uk-2007-05", "twitter-2010", "uk-2006-05", "com-friendster"):
        assert get(name).random_features, name
    for name in ("ogbn-products", "ogbn-papers100M", "mag240m", "reddit", "yelp"):
        assert not get(name).random_features, name


def test_each_table_row_points_at_its_dataset():
    expected = {
        "wholegraph.table2": ["ogbn-products", "ogbn-papers100M", "friendster", "uk-2007-05"],
        "xgnn.table3": ["twitter-2010", "ogbn-papers100M", "uk-2006-05", "com-friendster"],
        "mggcn.table1": ["citeseer", "ogbn-arxiv", "ogbn-papers100M", "ogbn-products",
                         "protein-hipmcl", "reddit-dgl"],
        "placement.table1": ["reddit", "yelp", "ogbn-products", "ogbn-papers100M", "mag240m"],
    }
    assert sorted(table_ids()) == sorted(expected)
    for table_id, names in expected.items():
        for name in names:
            appearance = get(name).appearance(table_id)
            assert appearance is not None, (table_id, name)
            assert appearance.paper in PAPERS


def test_unknown_name_is_one_clear_error():
    with pytest.raises(HarnessError, match="unknown dataset 'ogbn-nonesuch'"):
        get("ogbn-nonesuch")


def test_aliases_are_unique_and_normalized():
    seen = {}
    for spec in list_datasets():
        for key in (spec.name, *spec.aliases):
            assert seen.setdefault(normalize(key), spec.name) == spec.name
    assert resolve("uk_domain") == resolve("UK-DOMAIN") == "uk-2007-05"


def test_split_counts_scale_with_the_graph():
    split = get("products").split
    train, valid, test = split.counts(24490, 2449029)
    assert (train, valid, test) == (1966, 393, 22131)
    fractions = get("reddit").split
    assert fractions.counts(1000, 232965) == (660, 100, 240)
    assert sum(split.counts(10, 2449029)) <= 10
