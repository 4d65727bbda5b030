"""A question as one typed object (model.py) and its filters, applied in one stage
(filters.py)."""
