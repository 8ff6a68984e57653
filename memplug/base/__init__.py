"""What every layer may use: configuration, errors, text, paths, boundary models,
redaction and the other pure helpers.
"""
