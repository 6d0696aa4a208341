"""Agent runners behind the `AgentRunner` boundary (see `runners.base`)."""
