"""Pure cognitive building blocks: scheduling, secrets, importance, contradiction, gating."""
