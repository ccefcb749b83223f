"""Qdrant cluster layout options: checked on construction, passed only to a server's new collection."""

from __future__ import annotations

import numpy as np
import pytest

from culturekb.errors import ConfigError
from culturekb.retrieval.stores import make_store

pytest.importorskip("qdrant_client")


def test_bad_shard_number_is_refused() -> None:
    with pytest.raises(ConfigError, match="shard_number must be a positive integer"):
        make_store("qdrant", 4, shard_number=0)
    with pytest.raises(ConfigError, match="replication_factor"):
        make_store("qdrant", 4, replication_factor=-1)


def test_local_mode_ignores_the_cluster_layout() -> None:
    store = make_store("qdrant", 4, shard_number=3, replication_factor=2)
    v = np.eye(4, dtype=np.float32)
    store.add(["a", "b", "c", "d"], v, [{"culture": c} for c in ("en", "en", "zh", "zh")])
    assert store.search(v[2], k=1, culture="zh")[0][0][0] == "c"
    store.close()
