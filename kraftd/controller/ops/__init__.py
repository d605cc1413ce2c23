"""The controller's operations, one per API it writes for: each validates a request against the latest image and
returns a :class:`kraftd.controller.result.ControllerResult` (records plus the response already built)."""
