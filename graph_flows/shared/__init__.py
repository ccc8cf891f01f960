"""graph_flows/shared."""
