"""A multi-address network made of Linux network namespaces, for the tls tests.

:class:`Bridge` creates, under a prefix unique to this process, a namespace holding a bridge
``br0`` and ``n`` node namespaces, each linked to the bridge by a veth pair and given the
address ``10.231.<k>.<i+1>/24`` (loopback up). Nothing is created outside these namespaces:
every veth end lives in one of them, so ``ip netns del`` removes everything.
:meth:`Bridge.capture` runs ``tcpdump`` on the bridge; faults are :meth:`link` (down/up),
:meth:`rate` (``tc qdisc ... tbf``). :meth:`Bridge.close` stops every process it started (by
pid) and deletes every namespace; :func:`leftovers` lists what would remain.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = ["Bridge", "available", "leftovers"]


def available() -> str | None:
    """Why the harness cannot run here, or ``None``."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "tc", "tcpdump"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (Debian: iproute2, tcpdump)"
    return None


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=20)


def _in(ns: str, *args: str) -> None:
    subprocess.run(["ip", "netns", "exec", ns, *args], check=True, capture_output=True, timeout=20)


def leftovers(prefix: str) -> list[str]:
    """Namespaces named ``prefix*`` and links named ``prefix*`` in this namespace."""
    spaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10)
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, timeout=10)
    names = [line.split()[0] for line in spaces.stdout.splitlines() if line.strip()]
    found = [f"netns {n}" for n in names if n.startswith(prefix)]
    found += [
        f"link {line.split(':')[1].strip()}"
        for line in links.stdout.splitlines()
        if line.split(":")[1].strip().split("@")[0].startswith(prefix)
    ]
    return found


class Bridge:
    """``n`` node namespaces on one bridge (see the module docstring)."""

    def __init__(self, n: int, *, tag: str = "") -> None:
        self.prefix = f"chd{os.getpid() % 100000}{tag}"
        self.subnet = 1 + os.getpid() % 250
        self.hub = f"{self.prefix}h"
        self.nodes = [f"{self.prefix}n{i}" for i in range(n)]
        self.addresses = [f"10.231.{self.subnet}.{i + 1}" for i in range(n)]
        self.processes: list[subprocess.Popen[bytes]] = []
        self.captures: dict[int, Path] = {}
        try:
            self._build()
        except BaseException:
            self.close()
            raise

    def _build(self) -> None:
        _ip("netns", "add", self.hub)
        _in(self.hub, "ip", "link", "add", "br0", "type", "bridge")
        _in(self.hub, "ip", "link", "set", "br0", "up")
        for i, (ns, address) in enumerate(zip(self.nodes, self.addresses, strict=True)):
            _ip("netns", "add", ns)
            # Both veth ends are created inside the hub namespace and one is moved at once:
            # no interface ever exists in the test's own namespace.
            _in(
                self.hub,
                "ip",
                "link",
                "add",
                f"p{i}",
                "type",
                "veth",
                "peer",
                "name",
                "eth0",
                "netns",
                ns,
            )
            _in(self.hub, "ip", "link", "set", f"p{i}", "master", "br0")
            _in(self.hub, "ip", "link", "set", f"p{i}", "up")
            _in(ns, "ip", "addr", "add", f"{address}/24", "dev", "eth0")
            _in(ns, "ip", "link", "set", "eth0", "up")
            _in(ns, "ip", "link", "set", "lo", "up")

    def netns(self) -> list[tuple[str, str]]:
        """``(namespace, address)`` per node, as the tls backend's ``netns`` option takes."""
        return list(zip(self.nodes, self.addresses, strict=True))

    def capture(self, out: Path, *, snaplen: int = 128) -> subprocess.Popen[bytes]:
        """Start ``tcpdump`` on the bridge writing ``out`` (stopped by :meth:`stop_capture`);
        ``snaplen=0``: whole packets (to cut TCP streams into TLS records)."""
        proc = start_tcpdump(("ip", "netns", "exec", self.hub), "br0", out, snaplen=snaplen)
        self.processes.append(proc)
        self.captures[proc.pid] = out
        return proc

    def stop_capture(self, proc: subprocess.Popen[bytes]) -> int:
        """Stop a capture cleanly (:func:`stop_tcpdump`, once it holds :meth:`mark`'s
        packet); the packets the kernel dropped."""
        mark = self.mark if len(self.nodes) > 1 else None
        return stop_tcpdump(proc, self.captures.pop(proc.pid, None), mark)

    def mark(self) -> int:
        """Send a marker across the bridge: a connection from the last node to port 1 of
        the first, where nothing listens (SYN and RST); its port."""
        knock = f"import socket; socket.socket().connect_ex(({self.addresses[0]!r}, 1))"
        _in(self.nodes[-1], sys.executable, "-c", knock)
        return 1

    def link(self, i: int, up: bool) -> None:
        """Take node ``i``'s link down or up (its bridge port)."""
        _in(self.hub, "ip", "link", "set", f"p{i}", "up" if up else "down")

    def rate(self, i: int, rate: str) -> None:
        """Rate-limit traffic towards node ``i`` with a token bucket (``tc ... tbf``)."""
        _in(
            self.hub,
            "tc",
            "qdisc",
            "replace",
            "dev",
            f"p{i}",
            "root",
            "tbf",
            "rate",
            rate,
            "burst",
            "32kbit",
            "latency",
            "400ms",
        )

    def close(self) -> None:
        """Stop every process started here (by pid) and delete every namespace."""
        for proc in self.processes:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
            if proc.stderr is not None:
                proc.stderr.close()
        for ns in [*self.nodes, self.hub]:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=20)


def tcp_payload_bytes(pcap: Path) -> dict[tuple[str, str], int]:
    """TCP payload bytes per (source address, destination address) in a pcap file (IPv4,
    Ethernet, as written by tcpdump on the bridge)."""
    data = pcap.read_bytes()
    out: dict[tuple[str, str], int] = {}
    at = 24  # global header
    while at + 16 <= len(data):
        incl, orig = struct.unpack_from("<II", data, at + 8)
        packet = data[at + 16 : at + 16 + incl]
        at += 16 + incl
        if len(packet) < 34 or packet[12:14] != b"\x08\x00":
            continue
        ip = packet[14:]
        ihl = (ip[0] & 0x0F) * 4
        total = struct.unpack_from(">H", ip, 2)[0]
        if ip[9] != 6:
            continue
        tcp_header = (ip[ihl + 12] >> 4) * 4
        payload = total - ihl - tcp_header
        key = (".".join(map(str, ip[12:16])), ".".join(map(str, ip[16:20])))
        out[key] = out.get(key, 0) + payload
        del orig
    return out


def start_tcpdump(
    prefix: Sequence[str], interface: str, out: Path, *, snaplen: int = 128
) -> subprocess.Popen[bytes]:
    """``tcpdump`` on ``interface`` (run under ``prefix``, e.g. ``ip netns exec NS``) writing
    ``out``, once it says it is listening."""
    proc = subprocess.Popen(
        [
            *prefix,
            # --immediate-mode: packets reach tcpdump as they arrive. Without it libpcap's
            # TPACKET_V3 ring hands them over a block at a time, a block being retired only
            # when full or after tcpdump's 1 s timeout, so the capture's last second sat in
            # the kernel, unread when tcpdump was stopped (see stop_tcpdump).
            *("tcpdump", "-i", interface, "-U", "-n", "--immediate-mode"),
            # A 32 MiB kernel buffer: on a loaded 2-core machine tcpdump is starved for
            # whole rounds, and the default 2 MiB lets the kernel drop packets.
            *("-B", "32768", "-s", str(snaplen), "-w", str(out), "tcp"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 10
    assert proc.stderr is not None
    while time.monotonic() < deadline:  # tcpdump says "listening on IFACE" once ready
        line = proc.stderr.readline()
        if b"listening on" in line or not line:
            break
    return proc


def stop_tcpdump(
    proc: subprocess.Popen[bytes], out: Path | None, mark: Callable[[], int] | None = None
) -> int:
    """Stop a capture cleanly; the number of packets the kernel dropped (tcpdump's own
    count: a capture with drops cannot be cut into TLS records past the gap).

    SIGINT ends tcpdump without reading what is still queued in its kernel buffer (counted
    as neither captured nor dropped). With ``mark`` (sends a TCP packet the capture sees,
    returns its port, e.g. :func:`loopback_mark`) tcpdump is stopped only once ``out``
    holds that packet: everything captured before it is then written. Without, it waits (at
    most 10 s) until ``out`` has stopped growing for half a second — a guess, which lost
    the last round's ACKs of test_wire_capture when tcpdump had not written for 0.5 s."""
    if out is not None and proc.poll() is None and mark is not None:
        port, deadline = mark(), time.monotonic() + 60
        while not _holds_port(out, port):
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError(f"tcpdump did not write the marker packet (port {port})")
            time.sleep(0.05)
    elif out is not None and proc.poll() is None:
        size, still, deadline = -1, 0.0, time.monotonic() + 10
        while still < 0.5 and time.monotonic() < deadline:
            now = out.stat().st_size if out.exists() else 0
            still = still + 0.1 if now == size else 0.0
            size = now
            time.sleep(0.1)
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    text = proc.stderr.read().decode(errors="replace") if proc.stderr is not None else ""
    if proc.stderr is not None:
        proc.stderr.close()
    found = re.search(r"(\d+) packets? dropped by kernel", text)
    return int(found.group(1)) if found else 0


def loopback_mark() -> int:
    """Send a marker on 127.0.0.1 (a refused connection: SYN and RST); its port.

    The port is held by a bound socket that does not listen while the marker is sent: the
    kernel refuses the connection, and no other socket can take the port meanwhile."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        port: int = held.getsockname()[1]
        with socket.socket() as knock:
            knock.settimeout(5)
            knock.connect_ex(("127.0.0.1", port))
    return port


def _holds_port(pcap: Path, port: int) -> bool:
    """Whether the (possibly still growing) capture holds a TCP packet to or from ``port``."""
    from tests.net._pcap import ip_packets

    if not pcap.exists() or pcap.stat().st_size < 24:
        return False
    for _, ip in ip_packets(pcap):
        if len(ip) >= 24 and ip[0] >> 4 == 4 and ip[9] == 6:
            ihl = (ip[0] & 0x0F) * 4
            if len(ip) >= ihl + 4 and port in struct.unpack_from("!HH", ip, ihl):
                return True
    return False
