"""graph_flows/indexing/documents."""
