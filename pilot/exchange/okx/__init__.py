"""The OKX adapter: Pilot's venue port over OKX's v5 REST API (demo trading first). The only OKX-speaking
package: its signed HTTP client (client.py), its codes (codes.py), its markets and contracts (markets.py),
its JSON (payloads.py), the reads and writes (market_reads.py, account_reads.py, order_writes.py) and the
adapter that joins them (adapter.py). Where it may connect: urls.py."""
