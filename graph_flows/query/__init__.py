"""The query graph: analyze_query -> retrieve_knowledge -> build_context -> generate_response."""
