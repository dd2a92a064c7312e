"""Starting a command on another host: the launcher command (ssh unless
told otherwise) and the shell line that gives the remote rank its
environment, with the job's secret on stdin rather than in any argv."""

import os
import shlex

DEFAULT_LAUNCHER = ("ssh -o BatchMode=yes -o StrictHostKeyChecking=no "
                    "{ssh_options}{host} {command}")
# Not forwarded to remote ranks: they describe this shell, not the job.
LOCAL_ONLY_ENV = {"HOSTNAME", "PWD", "OLDPWD", "SHLVL", "_", "SSH_CLIENT",
                  "SSH_CONNECTION", "SSH_TTY", "SSH_AUTH_SOCK", "DISPLAY",
                  "XAUTHORITY", "LS_COLORS", "TERM", "TERMCAP", "MAIL"}
SECRET_VARIABLE = "HOROVOD_SECRET_KEY"


class Launcher:
    """The launcher template: {host} becomes the host name, {command} the
    shell command line (appended when the template has no {command})."""

    def __init__(self, args):
        template = args.launcher_command or os.environ.get(
            "HOROVOD_LAUNCHER_COMMAND")
        if not template:
            ssh_options = ""
            if args.ssh_port:
                ssh_options += f"-p {args.ssh_port} "
            if args.ssh_identity_file:
                ssh_options += f"-i {shlex.quote(args.ssh_identity_file)} "
            template = DEFAULT_LAUNCHER.replace("{ssh_options}", ssh_options)
        self.template = template

    def argv(self, host, shell_command):
        argv = []
        substituted = False
        for token in shlex.split(self.template):
            if "{command}" in token:
                substituted = True
            argv.append(token.replace("{host}", host)
                        .replace("{command}", shell_command))
        if not substituted:
            argv.append(shell_command)
        return argv


def rank_shell_command(job_env, command):
    """(shell line, secret): the line runs `command` on the remote host in
    this folder with this environment, reading the secret from stdin."""
    forwarded = {k: v for k, v in os.environ.items()
                 if k not in LOCAL_ONLY_ENV and k.isidentifier()
                 and not k.startswith("BASH_FUNC_")}
    forwarded.update(job_env)
    secret = forwarded.pop(SECRET_VARIABLE)
    line = (f"IFS= read -r {SECRET_VARIABLE}; export {SECRET_VARIABLE}; "
            f"cd {shlex.quote(os.getcwd())} 2>/dev/null; exec env " +
            " ".join(shlex.quote(f"{k}={v}")
                     for k, v in sorted(forwarded.items())) + " " +
            shlex.join(command) + " </dev/null")
    return line, secret
