"""Live agents: an ACP agent process on stdio, spoken to with the official SDK, judged by
the model."""
