"""Every exception Pilot defines, drawn as one tree; the codes a human is shown; the base of the errors that
explain themselves.

Where each failure becomes an answer is one function, `pilot.app.answers.failures.explain`: a tool's answer
(a store fault becomes rule storeUnavailable), a CLI command's error line or JSON document, a console page
(the console's exception handlers). An argument an agent got wrong is `ArgumentProblem`, answered in
`pilot/server/input_errors.py`; a refusal of Pilot's own is a value (`Violation`), never an exception.

The tree (name, the module under `pilot/` that defines it, what it means); `tests/core/test_errors.py`
holds it to the classes themselves, so a class added, moved or reparented without its line here fails:

    Exception
     ├── ExplainedError                            core.errors             a code, the problem and its fix
     │    ├── HumanError                           app.human.desk          a human's request cannot be done
     │    │    ├── NoJournal                       app.human.desk          no journal yet: `pilot init`
     │    │    ├── ReasonTooLong                   app.human.desk          a kill switch reason too long
     │    │    ├── ChannelOff                      app.human.desk          a confirmation channel is off
     │    │    ├── UnknownId                       app.human.desk          no such plan or confirmation
     │    │    ├── AmbiguousId                     app.human.desk          several ids start with the prefix
     │    │    ├── TokenExists                     app.human.desk          a token with this name exists
     │    │    ├── NoSuchToken                     app.human.desk          no token with this name
     │    │    ├── BadTokenName                    app.human.desk          not a token name
     │    │    ├── PolicyChangedMeanwhile          app.human.desk          policy.json changed under a draft
     │    │    ├── BadAgentRole                    app.human.agent_desk    not read, reduce or trade
     │    │    ├── NoSuchAgent                     app.human.agent_desk    no agent with this name
     │    │    ├── PhoneUnreachable                app.human.phone_setup   the phone's service did not answer
     │    │    ├── EmptySecret                     app.human.phone_setup   an empty bot token or topic
     │    │    ├── MoveRefused                     app.service.moving      a store move Pilot will not make
     │    │    ├── NotOnServer                     app.service.store_roles a PostgreSQL command, SQLite home
     │    │    └── LiveRefused                     app.human.going_live    live trading cannot be turned on
     │    └── KeysError                            keys.errors             a stored key cannot be used
     │         ├── MasterKeyError                  keys.errors             the master key file is unusable
     │         ├── NoKeyStored                     keys.errors             no active key for the environment
     │         ├── KeyAlreadyStored                keys.errors             `add` while a key is active
     │         ├── KeyPermissionsRejected          keys.errors             the key may do too much
     │         ├── PermissionCheckFailed           keys.errors             its permissions could not be read
     │         │    ├── PermissionCheckUnsupported keys.errors             the venue has no permission read
     │         │    └── KeyRefused                 keys.errors             the venue refused the key itself
     │         ├── KeyUnreadable                   keys.errors             does not decrypt with this master
     │         ├── InvalidKeyInput                 keys.errors             empty, or paper without a URL
     │         ├── JournalKeyError                 keys.seal               the journal key file is unusable
     │         └── CountdownLapsed                 app.service.countdown   OKX's countdown not renewed
     ├── StoreError                                store.errors            the store failed (sqlite3, psycopg)
     │    ├── StoreBusy                            store.errors            locked past the busy timeout
     │    ├── StoreFull                            store.errors            the disk is full: nothing written
     │    ├── DuplicateRecord                      store.errors            a unique id, key or name is taken
     │    ├── InvalidTransition                    store.errors            a record in the wrong state (a bug)
     │    ├── SchemaTooNew                         store.errors            written by a newer Pilot
     │    ├── StoreCorrupt                         store.errors            not a Pilot database, or damaged
     │    └── JournalKeyUnusable                   store.errors            the journal key cannot be used
     ├── Preempted                                 store.journal           an append `Unless`: not appended
     ├── ActiveKeyExists                           store.keystore          a key is active: retire it first
     ├── ExchangeError                             exchange.errors         the exchange's three outcomes
     │    ├── ExchangeRejected                     exchange.errors         sent: a definite no
     │    ├── ExchangeUnavailable                  exchange.errors         not reached, or not processed
     │    ├── OutcomeUnknown                       exchange.errors         sent, outcome unknown: never resend
     │    │    └── DuplicateOrderLinkId            exchange.errors         the client order id exists
     │    └── UnsupportedPositionMode              exchange.errors         hedge mode: one-way only
     ├── NoStreams                                 exchange.stream_events no streams where Pilot connects
     ├── MissingAuthHeaders                        paper.auth              paper: no X-BAPI-* headers
     ├── SimReject                                 paper.validation        paper: refused with a retCode
     ├── SecretUnreadable                          keys.channel_secrets    a channel secret does not decrypt
     ├── SealBroken                                keys.vault              a ciphertext that does not open
     ├── PushError                                 push.errors             Telegram or ntfy failed
     ├── TurnBusy                                  app.road.gate           the send turn held too long
     ├── StartupError                              app.service.boot        Pilot cannot start: code and fix
     ├── BackstopFailed                            app.service.backstops   a live home's DCP is not in place
     ├── CountdownFailed                           app.service.countdown   OKX's cancel-all-after not set
     ├── HomeExchangeFailed                        app.service.home_paper  the shared paper exchange failed
     ├── ArgumentProblem                           server.arguments        an agent's argument: field and fix
     ├── NotLoggedIn                               console.access          a console request without a session
     ├── StepFailed                                demo.agent              a demo step did not behave
     ├── BudgetSpent                               evals.budget            an eval's budget is spent
     └── ProviderError                             evals.conversation      a model call gave no answer
    ValueError
     ├── PolicyInvalid                             core.policy.parsing     policy.json's issues with fixes
     ├── InvalidInput                              app.orders.inputs       a wrong tool argument
     ├── RemoteHostRefused                         server.http             not loopback, no --allow-remote
     ├── CredentialProblem                         server.callers          the stdio credential is unreadable
     ├── CaseError                                 evals.case_book         an eval case file that is unusable
     ├── SetupError                                evals.providers         no model provider: code and fix
     ├── ScenarioError                             paper.scenario          a paper scenario that is unusable
     ├── StateError                                paper.lock              a paper state file that is unusable
     │    └── StateInUse                           paper.lock              another paper exchange holds it
     └── TapeError                                 paper.tape              a tape that cannot be replayed
    click.ClickException
     └── CliError                                  cli.output              a command's error: code and fix
          └── CheckFailed                          cli.output              the answer is no (exit 1)
"""

from __future__ import annotations

from enum import StrEnum


class ErrorCode(StrEnum):
    """Every code a failure shown to a human carries (a CLI error's `code`, a console page's `data-code`).

    Scripts and tests branch on these values, never on the words; a value never changes once released.
    """

    # a human's request (pilot.app.human)
    HUMAN_ERROR = "human_error"
    NO_JOURNAL = "no_journal"
    REASON_TOO_LONG = "reason_too_long"
    CLI_CHANNEL_OFF = "cli_channel_off"
    CONSOLE_CHANNEL_OFF = "console_channel_off"
    TELEGRAM_CHANNEL_OFF = "telegram_channel_off"
    UNKNOWN_ID = "unknown_id"
    AMBIGUOUS_ID = "ambiguous_id"
    TOKEN_EXISTS = "token_exists"
    NO_SUCH_TOKEN = "no_such_token"
    BAD_TOKEN_NAME = "bad_token_name"
    BAD_AGENT_ROLE = "bad_agent_role"
    NO_SUCH_AGENT = "no_such_agent"
    BAD_AGENT_CREDENTIAL = "bad_agent_credential"
    POLICY_CHANGED_MEANWHILE = "policy_changed_meanwhile"
    PHONE_UNREACHABLE = "phone_unreachable"
    EMPTY_SECRET = "empty_secret"
    NOT_ON_A_SERVER = "not_on_a_server"
    STORE_MOVE_REFUSED = "store_move_refused"
    # exchange keys and the journal key (pilot.keys)
    KEYS_ERROR = "keys_error"
    MASTER_KEY_UNUSABLE = "master_key_unusable"
    NO_KEY_STORED = "no_key_stored"
    KEY_ALREADY_STORED = "key_already_stored"
    KEY_PERMISSIONS_REJECTED = "key_permissions_rejected"
    KEY_PERMISSION_CHECK_FAILED = "key_permission_check_failed"
    KEY_PERMISSION_CHECK_UNSUPPORTED = "key_permission_check_unsupported"
    # the venue refused the key itself when its permissions were read (OKX's 501xx codes): each its own fix
    KEY_UNKNOWN_ON_HOST = "key_unknown_on_host"  # no such key at this host: another site's, or deleted
    KEY_WRONG_ENVIRONMENT = "key_wrong_environment"  # a demo key on the real account, or the other way
    KEY_IP_NOT_ALLOWED = "key_ip_not_allowed"  # this machine's IP is not on the key's IP list
    KEY_PASSPHRASE_WRONG = "key_passphrase_wrong"  # the passphrase is not the one chosen with the key
    KEY_INVALID = "key_invalid"  # the API key as typed is not one the venue issued
    KEY_SECRET_WRONG = "key_secret_wrong"  # the signature does not verify: the secret is not the key's
    KEY_UNREADABLE = "key_unreadable"
    INVALID_KEY_INPUT = "invalid_key_input"
    JOURNAL_KEY_UNUSABLE = "journal_key_unusable"
    # Pilot's database and the machine (pilot.app.answers.failures)
    STORE_FULL = "store_full"
    STORE_BUSY = "store_busy"
    STORE_CORRUPT = "store_corrupt"
    STORE_ERROR = "store_error"
    OS_ERROR = "os_error"
    # starting a server or the console
    CANNOT_START = "cannot_start"
    NO_STREAMS = "no_streams"
    UNKNOWN_TOOLS = "unknown_tools"
    REMOTE_HOST_REFUSED = "remote_host_refused"
    CANNOT_LISTEN = "cannot_listen"
    PORT_IN_USE = "port_in_use"
    PAPER_SCENARIO_MISMATCH = "paper_scenario_mismatch"  # the home's paper exchange runs another scenario
    NO_CONSOLE_SECRET = "no_console_secret"
    INVALID_STORE = "invalid_store"
    # the human's commands
    NOT_A_HOME = "not_a_home"
    NOT_PENDING = "not_pending"
    NOT_APPROVED = "not_approved"
    NOTHING_TO_ANCHOR = "nothing_to_anchor"
    LOSS_LIMIT_NOT_REACHED = "loss_limit_not_reached"
    DRAWDOWN_NOT_REACHED = "drawdown_not_reached"
    NO_PHONE_CHANNEL = "no_phone_channel"
    # the paper exchange's account and scenarios
    BAD_SCENARIO = "bad_scenario"
    PAPER_ACCOUNT_IN_USE = "paper_account_in_use"
    PAPER_ACCOUNT_UNREADABLE = "paper_account_unreadable"
    # pilot eval
    BAD_CASE_FILE = "bad_case_file"
    NO_CASES = "no_cases"
    BAD_AMOUNT = "bad_amount"
    HALF_A_PRICE = "half_a_price"
    NO_PRICES = "no_prices"
    PROVIDER_REFUSED_KEY = "provider_refused_key"
    UNKNOWN_PROVIDER = "unknown_provider"
    NO_MODEL = "no_model"
    NO_KEY = "no_key"
    # going live (pilot.app.human.going_live): mainnet, real money
    PRACTICE_HOME = "practice_home"  # the home is practice from its first entry: live needs a new home
    JOURNAL_GONE = "journal_gone"  # a home's journal was anchored in this folder and is gone: a new folder
    LIVE_HOME_ONLY_BYBIT = "live_home_only_bybit"  # a live Bybit home trades bybit (mainnet) and nothing else
    LIVE_HOME_ONLY_OKX = "live_home_only_okx"  # a live OKX home trades okx (real account) and nothing else
    NOT_A_TERMINAL = "not_a_terminal"  # live trading is turned on by a human typing at a terminal
    LIVE_PHRASE_MISMATCH = "live_phrase_mismatch"  # what was typed is not what the prompt asked
    LIVE_LIMITS_MISSING = "live_limits_missing"  # policy.json lacks limits a live home needs
    LIVE_OFF = "live_off"  # a live home whose live trading is off does not start its server
    KILL_SWITCH_ON = "kill_switch_on"  # live trading is not turned on while the kill switch is on
    DCP_NOT_SET = "dcp_not_set"  # Bybit's Disconnect Cancel All could not be set or verified
    CANCEL_AFTER_NOT_SET = "cancel_after_not_set"  # OKX's cancel-all-after could not be set or verified


class ExplainedError(Exception):
    """A failure that says what a human is told: a stable `code`, the `problem`, and the `fix`.

    A subclass sets `code` as a class attribute (or, where one class stands for several, on the instance).
    """

    code: ErrorCode = ErrorCode.HUMAN_ERROR

    def __init__(self, message: str, problem: str, fix: str) -> None:
        super().__init__(message)
        self.problem = problem
        self.fix = fix
