"""The hosts an elastic job uses now: the last discovery, less the hosts
blacklisted for a failure (for good, or until their cooldown ends), in the
order they first appeared, so that the oldest hosts keep the lowest ranks."""

import random
import time

from horovod.runner.log import log

ADDED, REMOVED = 1, 2  # what an update did, as bits


class HostState:
    def __init__(self):
        self.failures = 0
        self.blacklisted_until = None  # monotonic time; inf: for good


class HostManager:
    def __init__(self, discovery, cooldown_range=None, clock=time.monotonic):
        self.discovery = discovery
        self.cooldown_range = cooldown_range  # (low, high) seconds, or None
        self.clock = clock
        self.discovered = {}  # host -> slots, as last found
        self.order = []  # hosts in order of first appearance
        self.states = {}
        self.usable = {}  # what current() gave last time

    def state(self, host):
        return self.states.setdefault(host, HostState())

    def blacklisted(self, host):
        until = self.state(host).blacklisted_until
        return until is not None and self.clock() < until

    def blacklist(self, host):
        """After a failure on `host`: not used again before its cooldown
        (doubling with each failure, within the range) or, without a
        cooldown range, ever."""
        state = self.state(host)
        state.failures += 1
        if self.cooldown_range is None:
            state.blacklisted_until = float("inf")
            log(f"blacklisted host {host} after a failure")
            return
        low, high = self.cooldown_range
        delay = low * (1 << min(state.failures - 1, 30))
        delay = min(high, delay + random.uniform(0, low))
        state.blacklisted_until = self.clock() + delay
        log(f"blacklisted host {host} after failure {state.failures}; "
            f"cooldown {delay:.1f} s")

    def refresh(self):
        """Polls discovery; returns the ADDED/REMOVED bits of what changed
        in the usable hosts since the last call (blacklisting and cooldowns
        included)."""
        self.discovered = self.discovery.find()
        for host in self.discovered:
            if host not in self.order:
                self.order.append(host)
        return self.update_usable()

    def update_usable(self):
        before, now = self.usable, self.current()
        self.usable = now
        change = 0
        for host, slots in now.items():
            if slots > before.get(host, 0):
                change |= ADDED
        for host, slots in before.items():
            if slots > now.get(host, 0):
                change |= REMOVED
        return change

    def current(self):
        """{host: slots} usable now, in assignment order."""
        return {h: self.discovered[h] for h in self.order
                if self.discovered.get(h, 0) > 0 and not self.blacklisted(h)}

    def slot_count(self):
        return sum(self.current().values())
