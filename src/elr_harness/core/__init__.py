"""The leaf layer: typed configuration, the errors a person reads, and the
history contract in code. It imports nothing else of the project; every other
package may import it (tests/unit/test_layers.py holds the order)."""
