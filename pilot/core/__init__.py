"""Pure decision core: no I/O, no clock; facts in, violations out."""
