"""Strangers' messages to the rendezvous service (random bytes, bad lengths,
wrong or missing HMAC, replays, malformed requests) are dropped and logged;
the store is unchanged and the job completes."""

import unittest

import launcher_testlib as lib


class Security(unittest.TestCase):
    def test_garbage_changes_nothing(self):
        status, out, err, _ = lib.run(["-np", "2"] +
                                      lib.rank_command("attack"))
        self.assertEqual(status, 0, out + err)
        self.assertEqual(out.count("<stdout>:store unchanged"), 2, out)
        for reason in ("frame length 4294967280 outside",
                       "frame length 3 outside",
                       "connection closed inside a frame",
                       "bad HMAC",
                       "sequence number 0, expected 1",
                       "malformed PUT",
                       "PUT before JOIN",
                       "unknown op 51"):
            self.assertRegex(err, r"horovodrun: rendezvous: dropped message "
                             r"from 127\.0\.0\.1:\d+: " + reason)
        # Wrong secret, unsigned, signed as the server, replayed from
        # another connection: four frames failing authentication.
        self.assertEqual(err.count("bad HMAC"), 4, err)


if __name__ == "__main__":
    unittest.main()
