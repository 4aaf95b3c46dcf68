"""BLIP captioning on Conceptual Captions, tracked with Opik (the Comet BERTScore article's
pipeline): robust image fetching, batched captioning, scored experiments with or without a server.
"""
