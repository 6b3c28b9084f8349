"""Commands of this group are added by their issue; see DESIGN.md (CLI surface)."""
