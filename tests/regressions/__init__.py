"""One file per fixed bug, named after what broke."""
