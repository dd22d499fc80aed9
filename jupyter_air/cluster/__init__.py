"""Scale-out on a Ray cluster: connecting, one actor per node in a placement group, guarding what they start."""
