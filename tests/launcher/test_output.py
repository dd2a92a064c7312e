"""horovodrun's rank environment and output: rank-prefixed lines on stdout
and stderr, per-rank log files, the variables each rank gets."""

import os
import tempfile
import unittest

import launcher_testlib as lib


def env_of(stdout, rank):
    for line in stdout.splitlines():
        if line.startswith(f"[{rank}]<stdout>:env "):
            return dict(item.split("=", 1)
                        for item in line.split(":env ", 1)[1].split())
    raise AssertionError(f"no env line from rank {rank} in:\n{stdout}")


class Output(unittest.TestCase):
    def test_prefixes_environment_and_files(self):
        with tempfile.TemporaryDirectory() as tmp:
            logs = os.path.join(tmp, "logs")
            toml = os.path.join(tmp, "horovod.toml")
            open(toml, "w").close()
            # Two host names for this machine, so the layout has two hosts.
            status, out, err, _ = lib.run(
                ["-np", "3", "-H", "localhost:2,127.0.0.1:2",
                 "--output-filename", logs, "--config", toml,
                 "--network-interfaces", "lo", "--start-timeout", "7"] +
                lib.rank_command("hello"))
            self.assertEqual(status, 0, err)
            for r in range(3):
                self.assertIn(f"[{r}]<stdout>:hello from rank {r} of 3\n", out)
                self.assertIn(f"[{r}]<stdout>:no newline {r}\n", out)
                self.assertIn(f"[{r}]<stderr>:err line {r}\n", err)
                self.assertNotIn(f"err line {r}", out)

            expected = {0: ("localhost", 0, 2, 0), 1: ("localhost", 1, 2, 0),
                        2: ("127.0.0.1", 0, 1, 1)}
            for r, (host, local_rank, local_size, cross_rank) in \
                    expected.items():
                env = env_of(out, r)
                self.assertEqual(env["HOROVOD_RANK"], str(r))
                self.assertEqual(env["HOROVOD_SIZE"], "3")
                self.assertEqual(env["HOROVOD_HOSTNAME"], host)
                self.assertEqual(env["HOROVOD_LOCAL_RANK"], str(local_rank))
                self.assertEqual(env["HOROVOD_LOCAL_SIZE"], str(local_size))
                self.assertEqual(env["HOROVOD_CROSS_RANK"], str(cross_rank))
                self.assertEqual(env["HOROVOD_CROSS_SIZE"], "2")
                self.assertEqual(env["HOROVOD_CONFIG"], toml)
                self.assertEqual(env["HOROVOD_NETWORK_INTERFACES"], "lo")
                self.assertEqual(env["HOROVOD_START_TIMEOUT"], "7")
                # Every rank is on this machine: the service is on loopback.
                self.assertEqual(env["HOROVOD_RENDEZVOUS_ADDR"], "127.0.0.1")

                with open(os.path.join(logs, f"rank.{r}", "stdout")) as f:
                    text = f.read()
                self.assertIn(f"hello from rank {r} of 3\n", text)
                self.assertNotIn("<stdout>", text)
                with open(os.path.join(logs, f"rank.{r}", "stderr")) as f:
                    self.assertEqual(f.read(), f"err line {r}\n")

    def test_verbose_says_what_it_does(self):
        status, out, err, _ = lib.run(["-np", "1", "--verbose"] +
                                      lib.rank_command("hello"))
        self.assertEqual(status, 0, err)
        self.assertIn("rendezvous at 127.0.0.1:", err)
        self.assertIn("rank 0 on localhost:", err)
        self.assertIn("rank 0 on localhost exited with status 0", err)

    def test_plain_command_needs_no_rendezvous(self):
        status, out, err, _ = lib.run(["-np", "2", "--start-timeout", "1",
                                       "sh", "-c", "sleep 2; echo done"])
        self.assertEqual(status, 0, err)
        self.assertEqual(out.count("<stdout>:done"), 2)

    def test_bad_arguments(self):
        for args, message in (
                (["-np", "5", "-H", "localhost:2", "true"], "exceeds the 2"),
                (["-H", "localhost:x", "true"], "bad slot count"),
                (["true"], "-np is required"),
                (["-np", "1"], "no command")):
            status, _, err, _ = lib.run(args)
            self.assertEqual(status, 1, args)
            self.assertIn(message, err, args)

    def test_hostfile(self):
        with tempfile.NamedTemporaryFile("w", suffix=".hosts") as hosts:
            hosts.write("# two hosts\nlocalhost slots=1\n127.0.0.1:1\n")
            hosts.flush()
            status, out, err, _ = lib.run(["--hostfile", hosts.name] +
                                          lib.rank_command("hello"))
        self.assertEqual(status, 0, err)
        self.assertEqual(env_of(out, 1)["HOROVOD_HOSTNAME"], "127.0.0.1")
        self.assertEqual(env_of(out, 1)["HOROVOD_SIZE"], "2")


if __name__ == "__main__":
    unittest.main()
