"""graph_flows/indexing/extraction."""
