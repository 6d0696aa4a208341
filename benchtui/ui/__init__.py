"""The Textual front end: a thin skin over the engine's events and control calls.

Only this package imports Textual; the engine runs as a Trio guest on Textual's asyncio loop.
"""
