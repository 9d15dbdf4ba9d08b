"""One module per paper artifact: experiments/<paper>/<artifact>.py (docs/architecture.md#experiments)."""
