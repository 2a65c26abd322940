"""What tools answer and the journal records: answer models, refusals, receipts, plan records, entry kinds, store faults."""
