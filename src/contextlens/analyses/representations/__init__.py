"""Comparing representation spaces (not single vectors) within and across models: CKA."""
