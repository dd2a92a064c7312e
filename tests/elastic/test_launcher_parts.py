"""The elastic launcher's parts on their own (no job): discovery output,
the host manager's blacklist and cooldown, rank placement, and the
rendezvous service's worlds and worker requests over a real socket."""

import struct
import threading
import unittest

from horovod.runner.elastic import worker as worker_side
from horovod.runner.elastic.discovery import (DiscoveryFailed, FixedDiscovery,
                                              parse_host_slots)
from horovod.runner.elastic.driver import place
from horovod.runner.elastic.host_manager import ADDED, REMOVED, HostManager
from horovod.runner.elastic.rendezvous import ElasticRendezvous

SECRET = bytes(range(32))


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class Discovery(unittest.TestCase):
    def test_lines(self):
        self.assertEqual(parse_host_slots("a:2\nb\n\n c:4 \n", 3, "s"),
                         {"a": 2, "b": 3, "c": 4})

    def test_bad_line(self):
        with self.assertRaisesRegex(DiscoveryFailed, "bad line 'a:x'"):
            parse_host_slots("a:x\n", 1, "script")


class Hosts(unittest.TestCase):
    def manager(self, hosts, cooldown=None):
        clock = Clock()
        manager = HostManager(FixedDiscovery(hosts), cooldown, clock)
        self.assertEqual(manager.refresh(), ADDED)
        return manager, clock

    def test_blacklisted_for_good_without_cooldown(self):
        manager, clock = self.manager({"a": 1, "b": 2})
        manager.blacklist("a")
        self.assertEqual(manager.update_usable(), REMOVED)
        clock.now += 1e6
        self.assertEqual(manager.refresh(), 0)
        self.assertEqual(manager.current(), {"b": 2})

    def test_cooldown_doubles_within_range(self):
        manager, clock = self.manager({"a": 1, "b": 1}, cooldown=(10, 25))
        manager.blacklist("a")
        manager.update_usable()
        clock.now += 9.9
        self.assertEqual(manager.refresh(), 0)  # still cooling down
        clock.now += 10.2  # low + up to low of jitter
        self.assertEqual(manager.refresh(), ADDED)
        manager.blacklist("a")  # second failure: 20 s, capped at 25
        manager.update_usable()
        clock.now += 19.9
        self.assertNotIn("a", manager.current())
        clock.now += 5.2
        self.assertIn("a", manager.current())

    def test_order_of_first_appearance(self):
        manager, _ = self.manager({"b": 1, "a": 1})
        manager.discovery.hosts = {"c": 1, "a": 1, "b": 1}
        self.assertEqual(manager.refresh(), ADDED)
        self.assertEqual(list(manager.current()), ["b", "a", "c"])


class Placement(unittest.TestCase):
    def test_ranks_fill_hosts_in_order(self):
        p = place([("b", 0), ("a", 1), ("a", 0)], ["a", "b"])
        self.assertEqual([p[k].rank for k in [("a", 0), ("a", 1), ("b", 0)]],
                         [0, 1, 2])
        self.assertEqual((p[("a", 1)].local_rank, p[("a", 1)].local_size,
                          p[("b", 0)].cross_rank, p[("b", 0)].cross_size),
                         (1, 2, 1, 2))


class Service(unittest.TestCase):
    def setUp(self):
        self.server = ElasticRendezvous("127.0.0.1", SECRET, "job1")
        self.server.start()
        self.addCleanup(self.server.listener.close)
        self.env = {"HOROVOD_HOSTNAME": "a", "HOROVOD_ELASTIC_SLOT": "0",
                    "HOROVOD_RENDEZVOUS_ADDR": "127.0.0.1",
                    "HOROVOD_RENDEZVOUS_PORT": str(self.server.port),
                    "HOROVOD_SECRET_KEY": SECRET.hex(),
                    "HOROVOD_JOB_ID": "job1"}

    def test_assignment_news_and_superseded_world(self):
        first = place([("a", 0), ("b", 0)], ["a", "b"])
        self.server.publish(first)
        link = worker_side.WorkerLink(self.env)
        self.addCleanup(link.connection.close)
        a = link.next_assignment(5)
        self.assertEqual((a.epoch, a.rank, a.size), (1, 0, 2))
        self.assertEqual(link.membership_news(), (0, 0))
        self.server.note_update(ADDED)
        self.assertEqual(link.membership_news(), (1, ADDED))
        # A waiter in world 1's store is answered when world 2 opens.
        store = self.server.round.store
        answers = []
        waiter = threading.Thread(target=lambda: answers.append(
            self._get(store)))
        waiter.start()
        self.server.publish(place([("a", 0)], ["a"]))
        waiter.join(5)
        self.assertIn("superseded by epoch 2", answers[0])
        b = link.next_assignment(5)
        self.assertEqual((b.epoch, b.rank, b.size, b.update_seq),
                         (2, 0, 1, 1))

    def _get(self, store):
        with store.changed:
            status, fields = store.get(1, "key", 5)
        return fields[2:].decode()

    def test_retired_worker_is_told(self):
        self.server.publish(place([("b", 0)], ["b"]))
        self.server.retire(("a", 0), "host a slot 0 left the job")
        link = worker_side.WorkerLink(self.env)
        self.addCleanup(link.connection.close)
        with self.assertRaisesRegex(worker_side.RendezvousUnavailable,
                                    "host a slot 0 left the job"):
            link.next_assignment(5)

    def test_join_of_an_old_epoch_is_refused(self):
        self.server.publish(place([("a", 0)], ["a"]))
        self.server.publish(place([("a", 0)], ["a"]))
        connection = worker_side.Connection("127.0.0.1", self.server.port,
                                            SECRET)
        self.addCleanup(connection.close)
        fields = struct.pack(">II", 0, 1) + b"\x00\x04job1\x00\x01a" + \
            struct.pack(">Q", 1)
        with self.assertRaisesRegex(worker_side.RendezvousUnavailable,
                                    "epoch 1, but the job is at epoch 2"):
            connection.call(1, fields, 5)


if __name__ == "__main__":
    unittest.main()
