"""The guided search: rounds aimed at the KIP-966 and transaction states not yet
reached, each state's recipe, and what a round is made of."""
