"""Journal entry kinds: one name per thing that happened, so receipts and counts can find them."""

PLAN = "plan"  # a plan_order decision, ok or refused, with its violations and next action
PLACE_REFUSED = "place.refused"  # place_order refused before sending (lifecycle, re-evaluation, confirmation)
PLACE_PENDING = "place.pending"  # place_order or close_position parked for a human (pending_confirmation)
ORDER_SENT = "order.sent"  # written before the create request leaves; dailyOrderCap counts these
ORDER_OUTCOME = "order.outcome"  # what the exchange answered, or what reconnaissance found
ORDER_UNRESOLVED = "order.unresolved"  # written by earlier versions beside an unknown outcome; no longer read
ORDER_RESOLVED = (
    "order.resolved"  # an unsettled send, later found on the exchange (or given up as never executed)
)
ACTION = "action"  # cancel_order / set_leverage: attempt and outcome
KILL_SWITCH = "killswitch"  # on or off, and who
HOME = "home"  # a live home's first entry: it trades mainnet, real money (a home without it is practice)
DCP = "dcp"  # Bybit's Disconnect Cancel All: set and verified at start, its connection's events and pushes
KEY_CHECK = (
    "key.check"  # the stored exchange key's verdict changed (accepted, refused, unchecked) on a re-read
)
LIVE = "live"  # live trading turned on by a human at a terminal, or off by anyone (and why)
CONFIRMATION = "confirmation"  # asked, approved, declined, parked, decided in the CLI
REPLAY = "idempotency.replay"  # an idempotency key answered from its first call
POLICY_CHANGED = "policy.changed"  # policy.json rewritten by the human through the console
LOSS_LIMIT = (
    "loss_limit"  # the daily loss limit reached (trading turns reducing) or reset by a human, with numbers
)
PROTECTION = (
    "protection"  # after a fill that asked for a stop-loss: the position's stop as the exchange reports it
)
DRAWDOWN = "drawdown"  # the drawdown limit reached (trading turns reducing) or reset by a human, with numbers
EQUITY = (
    "equity"  # the equity as Pilot read it, when it was a new peak of the drawdown window (or a mark in it)
)
COOLDOWN = "cooldown"  # enough losing trades: no growing order for the cooldown's minutes, with the numbers
DEAD_MAN = "dead_man"  # the dead-man's switch fired: why, how long no agent call came, what it cancelled
STREAM_STATE = (
    "stream.state"  # the private stream down (why) after DOWN_AFTER_SECONDS out of sync, up, closed
)
STREAM_UNREADABLE = "stream.unreadable"  # a stream message Pilot could not read: channel, topic, how many
LATCH_CANCEL = (
    "latch.cancel"  # a latch turned trading reducing: the resting orders that could grow, cancelled
)
AGENT_SWITCH = (
    "agent.switch"  # one agent's kill switch on or off (or its credential revoked: on for good), and who
)
AGENT_ADDED = "agent.added"  # a human gave an agent a credential (its name and role; never the credential)
AGENT_REFUSED = "agent.refused"  # a tool refused at the edge for the agent's credential (its role, a revoke)
AGENT_DEAD_MAN = "agent.dead_man"  # one agent's dead-man's switch fired: its name, why, what it cancelled
