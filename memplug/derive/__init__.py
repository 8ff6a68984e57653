"""Derivation: the cue rules and extraction, re-derivation and upgrades, dialogue, work
records, the timeline, the entity graph, scopes and skills.
"""
