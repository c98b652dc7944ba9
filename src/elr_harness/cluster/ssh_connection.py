"""One SSH connection per host, reused by every command the harness runs there.

paramiko's transport multiplexes channels, so the nemesis, the observer and
the cluster may run commands on one host at once over one connection. Host
keys are checked against known_hosts; a key never seen is refused unless the
nodes file accepts new keys, and then it is appended to that known_hosts, so
the next run checks it. A changed key is always refused.
"""

from __future__ import annotations

import shlex
import threading
import time
from collections.abc import Callable
from pathlib import Path

import paramiko

from elr_harness.cluster.nodes_file import HostEntry
from elr_harness.core.config import SshConfig
from elr_harness.core.errors import HarnessError

#: Writes the bytes a command reads on its standard input.
Feed = Callable[[Callable[[bytes], None]], None]

_KNOWN_HOSTS_LOCK = threading.Lock()


class HostUnreachable(HarnessError):
    """A host of the nodes file cannot be reached or logged into."""


class _RecordNewKey(paramiko.MissingHostKeyPolicy):
    """Trust a host key never seen, and append it to known_hosts for next time."""

    def __init__(self, known_hosts: Path) -> None:
        self.known_hosts = known_hosts

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str,
                         key: paramiko.PKey) -> None:
        client.get_host_keys().add(hostname, key.get_name(), key)
        with _KNOWN_HOSTS_LOCK:
            self.known_hosts.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            with open(self.known_hosts, "a") as out:
                out.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")


class SshHost:
    """The connection to one host, made on first use and again if it dropped."""

    def __init__(self, entry: HostEntry, known_hosts: Path, accept_new_host_keys: bool,
                 config: SshConfig) -> None:
        self.entry = entry
        self.known_hosts = known_hosts
        self.accept_new_host_keys = accept_new_host_keys
        self.config = config
        self._client: paramiko.SSHClient | None = None
        self._lock = threading.Lock()

    @property
    def where(self) -> str:
        e = self.entry
        return f"{e.spec.name} ({e.user}@{e.spec.address}:{e.port})"

    def _transport(self) -> paramiko.Transport:
        with self._lock:
            transport = self._client.get_transport() if self._client else None
            if transport is None or not transport.is_active():
                self._client = self._connect()
                transport = self._client.get_transport()
            assert transport is not None
            return transport

    def _connect(self) -> paramiko.SSHClient:
        client = paramiko.SSHClient()
        if self.known_hosts.is_file():
            client.load_system_host_keys(str(self.known_hosts))
        client.set_missing_host_key_policy(
            _RecordNewKey(self.known_hosts) if self.accept_new_host_keys
            else paramiko.RejectPolicy())
        e, t = self.entry, self.config.connect_timeout_s
        try:
            client.connect(e.spec.address, port=e.port, username=e.user,
                           key_filename=str(e.key_file) if e.key_file else None,
                           allow_agent=e.agent, look_for_keys=False, timeout=t,
                           banner_timeout=t, auth_timeout=t, channel_timeout=t)
        except paramiko.BadHostKeyException as err:
            raise HostUnreachable(f"host {self.where}: its host key changed since it was "
                                  f"recorded in {self.known_hosts} ({err.key.get_name()}); "
                                  "refusing to connect") from None
        except paramiko.AuthenticationException as err:
            raise HostUnreachable(f"host {self.where}: login refused ({err})") from None
        except paramiko.SSHException as err:
            if "not found in known_hosts" in str(err):
                raise HostUnreachable(
                    f"host {self.where}: its host key is not in {self.known_hosts}; add it "
                    "(ssh-keyscan) or set accept_new_host_keys: true in the nodes file") \
                    from None
            raise HostUnreachable(f"host {self.where} is unreachable: {err}") from None
        except (OSError, EOFError) as err:
            reason = err.strerror if isinstance(err, OSError) and err.strerror else (
                str(err) or type(err).__name__)
            raise HostUnreachable(f"host {self.where} is unreachable: {reason}") from None
        transport = client.get_transport()
        if transport is not None:
            transport.set_keepalive(int(self.config.keepalive_s))
        return client

    def connect(self) -> None:
        """Make sure the connection is up (HostUnreachable naming the host if not)."""
        self._transport()

    def run(self, command: str, timeout_s: float, *, feed: Feed | None = None,
            combine_stderr: bool = True) -> tuple[int, bytes, bytes]:
        """Run a shell command line; (exit code, stdout, stderr). The command should
        bound itself (`timeout`); this waits answer_grace_s longer, then gives up."""
        try:
            channel = self._transport().open_session(timeout=self.config.connect_timeout_s)
        except (paramiko.SSHException, OSError, EOFError) as err:
            self.close()
            raise HostUnreachable(f"host {self.where}: no session ({err})") from None
        deadline = time.monotonic() + timeout_s + self.config.answer_grace_s
        try:
            channel.settimeout(timeout_s + self.config.answer_grace_s)
            channel.set_combine_stderr(combine_stderr)
            channel.exec_command(command)
            if feed is not None:
                feed(channel.sendall)
                channel.shutdown_write()
            stdout = bytearray()
            while chunk := channel.recv(65536):
                stdout += chunk
                if time.monotonic() > deadline:
                    raise TimeoutError
            stderr = b"" if combine_stderr else _drain_stderr(channel)
            if not channel.status_event.wait(max(0.0, deadline - time.monotonic())):
                raise TimeoutError
            return channel.exit_status, bytes(stdout), stderr
        except TimeoutError:
            raise HarnessError(f"host {self.where}: no answer within {timeout_s:.0f} s to "
                               f"{shlex.split(command)[-1][:80]!r}") from None
        except (paramiko.SSHException, OSError, EOFError) as err:
            self.close()
            raise HostUnreachable(f"host {self.where}: connection lost ({err})") from None
        finally:
            channel.close()

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None


def _drain_stderr(channel: paramiko.Channel) -> bytes:
    err = bytearray()
    while chunk := channel.recv_stderr(65536):
        err += chunk
    return bytes(err)
