"""The ACP wire: model requests as JSON-RPC messages, and the official schemas they obey."""
