"""Reports: pictures of plans (tables live with the CLI that prints them)."""
