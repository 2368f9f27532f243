"""Where requests to model endpoints may go.

Endpoint URLs are typed by project members, so a URL must not reach the machine's own
services or the cloud's metadata service (where credentials live). The check runs twice:
when a URL is saved (a clear message in the form) and on every connection, against the
address the socket actually connects to, so a name that resolves to a public address when
saved and to a private one later (DNS rebinding) is still refused. The connection check is
conduct.guarded_http's transport.

Link-local, multicast, unspecified and reserved addresses are always refused. Loopback and
private ranges are refused unless the deployment allows them (ENDPOINTS_ALLOW_PRIVATE_NETWORKS,
for a laptop or a lab's own model server). Hosts the deployment itself configured
(OPENAI_BASE_URL) are trusted as written.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass, field
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
NAT64 = ipaddress.ip_network("64:ff9b::/96")


class EgressRefused(Exception):
    """A request to a model endpoint was not sent; the message says why."""


@dataclass(frozen=True)
class EgressPolicy:
    allow_private_networks: bool = False
    trusted_hosts: frozenset[str] = field(default_factory=frozenset)

    def refusal(self, address: IPAddress) -> str | None:
        """Why a connection to `address` is refused, or None when it may be made."""
        embedded = embedded_ipv4(address)
        if embedded is not None:
            address = embedded
        if address.is_link_local:
            return f"{address} is a link-local address (where cloud metadata services live)"
        if address.is_multicast or address.is_unspecified or (address.is_reserved and not address.is_loopback):
            return f"{address} is not an address a model endpoint can have"
        if not address.is_global and not self.allow_private_networks:
            kind = "a loopback" if address.is_loopback else "a private-network"
            return (f"{address} is {kind} address, and this deployment does not allow model endpoints on "
                    "private networks (ENDPOINTS_ALLOW_PRIVATE_NETWORKS)")
        return None

    def check_host(self, host: str, port: int, *, unresolvable_ok: bool = False) -> list[IPAddress]:
        """The addresses `host` resolves to, all allowed; raises EgressRefused otherwise.

        `unresolvable_ok`: a name that does not resolve here passes (empty list); the check on
        connecting still applies wherever the request is made.
        """
        host = host.strip("[]").lower()
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as exc:
            if unresolvable_ok:
                return []
            raise EgressRefused(f"{host} cannot be resolved: {exc}") from exc
        addresses = list(dict.fromkeys(ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos))
        if host not in self.trusted_hosts:
            for address in addresses:
                reason = self.refusal(address)
                if reason:
                    shown = host if host == str(address) else f"{host} ({address})"
                    raise EgressRefused(f"{shown}: {reason}.")
        return addresses

    def check_url(self, url: str) -> None:
        """Raise EgressRefused when `url` cannot be a model endpoint (scheme, host or the addresses it resolves to)."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise EgressRefused("An endpoint URL starts with http:// or https://.")
        if not parts.hostname:
            raise EgressRefused("The endpoint URL has no host.")
        if parts.username or parts.password:
            raise EgressRefused("Put credentials in a stored key, not in the URL.")
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError as exc:
            raise EgressRefused(f"The endpoint URL's port is not valid: {exc}.") from exc
        self.check_host(parts.hostname, port, unresolvable_ok=True)


def embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries and reaches (mapped, compatible, 6to4, Teredo, NAT64)."""
    if address.version != 6:
        return None
    if address.ipv4_mapped:
        return address.ipv4_mapped
    if address.sixtofour:
        return address.sixtofour
    if address.teredo:
        return address.teredo[1]
    if address in NAT64 or int(address) >> 32 == 0 and int(address) > 1:  # ::a.b.c.d (deprecated compatible form)
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def normalized_url(url: str) -> str:
    """A base URL in one spelling, to compare where a key may go with where a request would go."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    default = {"http": 80, "https": 443}.get(scheme)
    netloc = f"[{host}]" if ":" in host else host
    if port and port != default:
        netloc = f"{netloc}:{port}"
    return f"{scheme}://{netloc}{parts.path.rstrip('/')}"


def stays_local(url: str) -> bool:
    """True when every address `url`'s host resolves to is on this machine or a private network."""
    parts = urlsplit(url)
    try:
        infos = socket.getaddrinfo((parts.hostname or "").strip("[]"), parts.port or 443, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, ValueError):
        return False
    addresses = [ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos]
    return bool(addresses) and not any((embedded_ipv4(a) or a).is_global for a in addresses)
