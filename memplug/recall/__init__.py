"""Recall: the query parser, retrieval, assembly of the one evidence message, the
resident core, rules and validation.
"""
