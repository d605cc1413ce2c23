"""Partitions by broker (issues 22, 24): which partitions' ISR, ELR or leadership a broker holds, kept by apply.

Fencing, unfencing, controlled shutdown and a broker's re-registration change the partitions of one broker; with
these indexes they cost O(that broker's partitions), not a scan of every partition of the image.

Contracts:
1. ``image.isr_index``, ``image.elr_index`` and ``image.leader_index`` map a broker id (for the leader index also
   -1: leaderless) to the (topic id, partition id) of every partition whose ISR / ELR holds it, or it leads.
   They are derived from ``image.topics`` alone and change only with it, in
   :func:`kraftd.controller.apply.apply_record` (:func:`update` on every partition set or removed), so every
   node that applied the same records holds the same indexes. Being derived, they are no part of the image's
   checksum; :func:`consistent` compares them with the partitions (the simulator's invariant 31).
2. Copy-on-write per broker, as topics are (kraftd.controller.image invariant 3b): each broker's entry is a
   :class:`Held` tagged with the image ``owner`` that made it; an image changes a Held in place only while it
   owns it, and otherwise first copies that one broker's Held (O(its topics), once per broker after a
   ``copy()``). An image copy shares every Held in O(1); an update costs O(1) per broker that joined or left.
   (A persistent map per broker cost 4.4 us per entry added, 3.5 s of CPU per 200k partitions replayed.)
2a. Compact (issue 24): a Held maps each topic id to a bit mask of its partition ids below :data:`MASKED`
   (bit p set: partition p held), and keeps the (rare) higher ids as (topic id, partition id) keys. A set of
   (topic id, partition id) tuples cost about 200 bytes per partition over the three indexes; masks cost
   about 20 at 100 partitions per topic.
2b. A mask is keyed by the topic id's integer (``UUID.int``), not the UUID object: a dict of ints only is never
   tracked by Python's garbage collector, so copying a broker's Held (contract 2: once per broker and image
   after every ``copy()``, ~10k topics at 1M partitions) allocates nothing the collector scans. Keyed by UUIDs,
   those copies (the leader's view is reshared every 10k records, machine contract 3a) were the young objects
   that made each young collection 35-54 ms at 300k partitions and up to ~300 ms at 1M (issue 24, session 13).
2c. A Held's masks are ``BUCKETS`` dicts chosen by the topic id's low bits, each copied on its own: a Held copy
   shares every bucket (O(BUCKETS)) and the first change of a bucket copies that bucket only (O(the broker's
   topics / BUCKETS)). One dict per Held made every first change after a ``copy()`` copy ~10k masks at 1M
   partitions: the leader's view is reshared every 10k records, so the next replay slice copied the Helds of
   every broker in both images (100 brokers: 3 x 100 x 2 dicts of 10k entries) and ran 200 ms of loop CPU past its
   20 ms budget (issue 24, session 14).
3. :func:`keys` lists a broker's partitions in topic-name then partition-id order, the order Kafka's controller
   and kraftd.controller.brokers generate partition changes in. :func:`key_chunks` gives the same list in chunks,
   each computed when asked (issue 24: listing the 100k ISR entries of a broker at 1M partitions held the
   leader's loop for 170-220 ms of CPU when fencing it or shutting it down): once O(the broker's topics) to copy
   its entry and order its topics by name, then O(chunk) a chunk.
3a. While :func:`key_chunks` orders the broker's topics by name it yields an empty chunk after every
   ``ORDER_STEP`` topics it named: the caller gives the event loop a turn there (kraftd.shell.controller.fencing
   contract 7). Naming and ordering a broker's ~10k topics at 1M partitions (a UUID and a name lookup each) was one
   96 ms step of loop CPU before a controlled shutdown's first write (issue 24, session 14); the copy of its
   entry (its masks, dict copies in C) stays one step, so the listing is still the image at the first ``next()``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from immutables import Map

if TYPE_CHECKING:
    from kraftd.controller.image import MetadataImage, PartitionState

Key = tuple[uuid.UUID, int]
NO_LEADER = -1


MASKED = 1024  # partition ids below this are bits of a topic's mask (contract 2a)
ORDER_STEP = 1000  # contract 3a: topics named between two empty chunks
BUCKETS = 64  # contract 2c: a Held's masks in this many dicts, each copied on its own first change
_BUCKET_MASK = BUCKETS - 1


class Held:
    """One broker's partitions in one index (contracts 2, 2a, 2c)."""

    __slots__ = ("parts", "mine", "count", "high", "owner")

    def __init__(
        self, parts: list[dict[int, int] | None], mine: int, count: int, high: set[Key], owner: object
    ) -> None:
        self.parts = parts  # BUCKETS dicts (or None: empty) of topic id int -> mask, by the int's low bits
        self.mine = mine  # bit i set: parts[i] is this Held's own (contract 2c), else shared with a copy
        self.count = count  # mask entries over all parts
        self.high = high
        self.owner = owner

    def __bool__(self) -> bool:
        return bool(self.count or self.high)

    def _part(self, k: int) -> dict[int, int]:
        """Contract 2c: the bucket of ``k``, this Held's own (copied first if shared)."""
        i = k & _BUCKET_MASK
        d = self.parts[i]
        if not (self.mine >> i) & 1:
            d = {} if d is None else dict(d)
            self.parts[i] = d
            self.mine |= 1 << i
        assert d is not None
        return d

    def add(self, tid: uuid.UUID, pid: int) -> None:
        if pid < MASKED:
            k = tid.int  # contract 2b
            d = self._part(k)
            mask = d.get(k, 0)
            if not mask:
                self.count += 1
            d[k] = mask | (1 << pid)
        else:
            self.high.add((tid, pid))

    def discard(self, tid: uuid.UUID, pid: int) -> None:
        if pid >= MASKED:
            self.high.discard((tid, pid))
            return
        k = tid.int  # contract 2b
        shared = self.parts[k & _BUCKET_MASK]
        if shared is None or k not in shared:
            return
        d = self._part(k)
        mask = d[k] & ~(1 << pid)
        if mask:
            d[k] = mask
        else:
            del d[k]
            self.count -= 1

    def mask_items(self) -> Iterator[tuple[int, int]]:
        """(topic id int, mask) of every topic with a partition below MASKED, in no particular order."""
        for d in self.parts:
            if d:
                yield from d.items()

    def copy(self, owner: object) -> Held:
        """Contract 2c: O(BUCKETS); every bucket shared until changed."""
        return Held(list(self.parts), 0, self.count, set(self.high), owner)

    def keys(self) -> set[Key]:
        return {(uuid.UUID(int=k), pid) for k, mask in self.mask_items() for pid in _bits(mask)} | self.high


def _bits(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


Index = Map[int, Held]
NAMES = ("isr_index", "elr_index", "leader_index")


def _held(image: MetadataImage, name: str, broker: int) -> Held:
    index: Index = getattr(image, name)
    h = index.get(broker)
    if h is None or h.owner is not image.owner:
        h = Held([None] * BUCKETS, 0, 0, set(), image.owner) if h is None else h.copy(image.owner)
        setattr(image, name, index.set(broker, h))
    return h


def _moved(
    image: MetadataImage, name: str, tid: uuid.UUID, pid: int, was: Sequence[int], now: Sequence[int]
) -> None:
    for b in was:
        if b not in now:
            h = _held(image, name, b)
            h.discard(tid, pid)
            if not h:
                setattr(image, name, getattr(image, name).delete(b))
    for b in now:
        if b not in was:
            _held(image, name, b).add(tid, pid)


def update(
    image: MetadataImage, tid: uuid.UUID, pid: int, old: PartitionState | None, new: PartitionState | None
) -> None:
    """Contract 1: partition ``pid`` of ``tid`` went from ``old`` to ``new`` (None: absent)."""
    was: Sequence[int] = old.isr if old is not None else ()
    now: Sequence[int] = new.isr if new is not None else ()
    if was != now:
        _moved(image, "isr_index", tid, pid, was, now)
    was = old.elr if old is not None else ()
    now = new.elr if new is not None else ()
    if was != now:
        _moved(image, "elr_index", tid, pid, was, now)
    was = (old.leader,) if old is not None else ()
    now = (new.leader,) if new is not None else ()
    if was != now:
        _moved(image, "leader_index", tid, pid, was, now)


def keys(image: MetadataImage, index: Index, broker: int) -> list[Key]:
    """Contract 3: (topic id, partition id) of ``broker``'s entries in ``index``. Each topic's name is looked up
    once, not once per key (sorting 66k keys by a name lookup each took 2 s of the leader's loop when fencing a
    broker at 1M partitions), and a mask's bits come out in partition order."""
    h = index.get(broker)
    if h is None:
        return []
    by_topic: dict[uuid.UUID, list[int]] = {uuid.UUID(int=k): _bits(mask) for k, mask in h.mask_items()}
    for tid, pid in sorted(h.high):  # ids >= MASKED, after a mask's (ascending) bits
        by_topic.setdefault(tid, []).append(pid)
    topics = image.topics
    out: list[Key] = []
    for tid in sorted(by_topic, key=lambda t: topics[t].name):
        out.extend((tid, pid) for pid in by_topic[tid])
    return out


def key_chunks(image: MetadataImage, index: Index, broker: int, size: int) -> Iterator[list[Key]]:
    """Contract 3: :func:`keys` of the image as it is at the first ``next()``, in chunks of at most ``size``;
    contract 3a: empty chunks while its topics are being ordered."""
    h = index.get(broker)
    if h is None:
        return
    # the image may change (in place, if it owns this entry) between two chunks: its masks copied now
    parts = [dict(d) for d in h.parts if d]
    high: dict[uuid.UUID, list[int]] = {}
    for tid, pid in sorted(h.high):
        high.setdefault(tid, []).append(pid)
    topics = image.topics  # persistent (image invariant 3): a later record replaces the map, never changes it
    named: list[tuple[str, uuid.UUID, int]] = []
    for d in parts:
        for k, mask in d.items():
            tid = uuid.UUID(int=k)
            named.append((topics[tid].name, tid, mask))
            if len(named) % ORDER_STEP == 0:
                yield []  # contract 3a
    masked = {tid for _, tid, _ in named} if high else set()
    named += [(topics[tid].name, tid, 0) for tid in high.keys() - masked]
    named.sort(key=_by_name)
    out: list[Key] = []
    for _, tid, mask in named:
        out.extend((tid, pid) for pid in _bits(mask))
        out.extend((tid, pid) for pid in high.get(tid, ()))
        while len(out) >= size:
            yield out[:size]
            out = out[size:]
    if out:
        yield out


def _by_name(entry: tuple[str, uuid.UUID, int]) -> str:
    return entry[0]  # topic names are unique in an image


def holds_any(index: Index, broker: int) -> bool:
    return broker in index


def _plain(image: MetadataImage) -> list[dict[int, set[Key]]]:
    return [{b: h.keys() for b, h in getattr(image, n).items()} for n in NAMES]


def consistent(image: MetadataImage) -> bool:
    """Contract 1: the kept indexes equal those rebuilt from ``image.topics`` alone (O(image))."""
    from kraftd.controller.image import (
        MetadataImage as Image,
    )  # at call time: image imports nothing from here

    fresh = Image()
    for tid, t in image.topics.items():
        for pid, p in t.partitions.items():
            update(fresh, tid, pid, None, p)
    return _plain(fresh) == _plain(image)
