"""The web face: ``contextlens serve``. Pages and a JSON API over the same analyses as the CLI."""
