"""Quality evaluation use cases: multihop retrieval (`krag eval multihop`) and Re-DocRED
extraction scoring (`krag eval extraction`). Progress is reported through callbacks only."""
