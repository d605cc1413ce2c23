"""kraftd.shell: the asyncio node around the sans-IO core (kraftd.core).

Contracts:
1. Effects of one core step are executed in order: election state is durable before any message of the same
   step leaves ("persist, then send, then apply").
2. Log bytes count toward the high watermark only after fsync: the core learns about durability only through
   ``LogFlushed`` events the shell feeds after a completed flush.
3. A storage I/O failure (LogIOError) stops the node: nothing after it is acknowledged.
"""
