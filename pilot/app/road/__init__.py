"""The one road to the exchange: the ports (the exchange's reader and writer, and the clock time limits are read on) and the gate that holds the only writer."""
