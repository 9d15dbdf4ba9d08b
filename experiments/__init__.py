"""One module per paper artifact: experiments/<paper>/<artifact>.py (see DESIGN section 3)."""
