"""The metering gateway: agents call it as their model API; it holds each call's worst case on
the session's meter, forwards it to the provider with the real key, and charges the usage."""

from benchtui.runners.kit.gateway.server import Gateway, GatewayError, open_gateway

__all__ = ["Gateway", "GatewayError", "open_gateway"]
