"""ui/web."""
