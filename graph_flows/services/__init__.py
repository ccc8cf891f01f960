"""Use cases the front ends in ``ui/`` share (plain Python: no typer, rich, streamlit or mcp).

- :mod:`.ask`: ask with a streamed answer; kag_query (retrieval and context, no answer);
- :mod:`.memory`: recall, remember and correct facts on one scope;
- :mod:`.ingest`: ingest with N worker processes and progress callbacks;
- :mod:`.sources`: status per source, remove a source, re-embed;
- :mod:`.uploads`: uploaded files into the graph;
- :mod:`.explore`, :mod:`.scopes`: entity look-ups and neighbourhoods; the scope hierarchy;
- :mod:`.doctor`: the settings, database and model report.

Anticipated bad input raises :class:`.errors.RequestError` (one line).
"""
