"""graph_flows/services."""
