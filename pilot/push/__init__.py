"""The human's phone: clients for the Telegram Bot API and ntfy, over HTTPS (the only importer of httpx2).

Pilot only calls out: it sends messages and notifications, and reads Telegram's answers by long polling
(getUpdates), so nothing listens for the phone and no port is open to anyone. Errors are translated here into
`PushError` (the service, what failed, a retry time when the service gave one), never with the bot token,
which is part of every Telegram URL.
"""

from pilot.push.errors import PushError
from pilot.push.ntfy import NTFY_SERVER, Ntfy
from pilot.push.telegram import TELEGRAM_API, Press, TelegramBot

__all__ = ["NTFY_SERVER", "TELEGRAM_API", "Ntfy", "Press", "PushError", "TelegramBot"]
