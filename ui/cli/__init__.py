"""ui/cli."""
