"""Where requests to model endpoints may go.

Endpoint URLs are typed by project members, so a URL must not reach the machine's own
services or the cloud's metadata service (where credentials live). The check runs twice:
when a URL is saved (a clear message in the form) and on every connection, against the
address the socket actually connects to, so a name that resolves to a public address when
saved and to a private one later (DNS rebinding) is still refused. The connection check is
conduct.guarded_http's transport.

Link-local, metadata, multicast, unspecified and reserved addresses are always refused. Loopback
and private ranges are refused unless the deployment allows them (ENDPOINTS_ALLOW_PRIVATE_NETWORKS,
for a laptop or a lab's own model server). The endpoint the deployment itself configured
(OPENAI_BASE_URL) may be private: that host and port only, not the host's other services.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass, field
from urllib.parse import SplitResult, urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
NAT64 = ipaddress.ip_network("64:ff9b::/96")
# Cloud metadata services outside the link-local range, refused even where private networks are allowed:
# AWS over IPv6, Google Cloud over IPv6, Alibaba Cloud.
METADATA_NETWORKS = tuple(ipaddress.ip_network(n) for n in ("fd00:ec2::254/128", "fd20:ce::254/128", "100.100.100.200/32"))


class EgressRefused(Exception):
    """A request to a model endpoint was not sent; the message says why."""


class ResponseTooLarge(Exception):
    """An endpoint's answer went past the size a model answer can have; reading stopped there."""


@dataclass(frozen=True)
class EgressPolicy:
    allow_private_networks: bool = False
    # (host, port) pairs the deployment configured, which may be on a private network.
    trusted_endpoints: frozenset[tuple[str, int]] = field(default_factory=frozenset)
    # Only this machine and private networks: a project that keeps transcript text local (the second reader).
    local_only: bool = False

    def refusal(self, address: IPAddress, *, trusted: bool = False) -> str | None:
        """Why a connection to `address` is refused, or None when it may be made.

        `trusted`: the deployment's own endpoint, which may be private but never link-local or metadata.
        """
        embedded = embedded_ipv4(address)
        if embedded is not None:
            address = embedded
        if address.is_link_local:
            return f"{address} is a link-local address (where cloud metadata services live)"
        if any(address in network for network in METADATA_NETWORKS):
            return f"{address} is a cloud metadata service's address (where cloud credentials live)"
        # Site-local IPv6 (fec0::/10) is deprecated, and Python counts it as global.
        site_local = address.version == 6 and address.is_site_local
        if address.is_multicast or address.is_unspecified or site_local or (address.is_reserved and not address.is_loopback):
            return f"{address} is not an address a model endpoint can have"
        if self.local_only and address.is_global:
            return (f"{address} is not on this machine or a private network, and this project sends transcript text "
                    "only to local endpoints")
        if not address.is_global and not self.allow_private_networks and not trusted:
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
        trusted = (host, port) in self.trusted_endpoints
        for address in addresses:
            reason = self.refusal(address, trusted=trusted)
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
            port = url_port(parts)
        except ValueError as exc:
            raise EgressRefused(f"The endpoint URL's port is not valid: {exc}.") from exc
        self.check_host(parts.hostname, port, unresolvable_ok=True)


def url_port(parts: SplitResult) -> int:
    """The port a URL connects to, its scheme's default when it names none; ValueError when it is not a port."""
    return parts.port or (443 if parts.scheme.lower() == "https" else 80)


def endpoint_of(url: str) -> tuple[str, int] | None:
    """The (host, port) a base URL connects to, spelled as the connection check sees it; None when it has none."""
    parts = urlsplit(url.strip())
    try:
        return ((parts.hostname or "").strip("[]").lower(), url_port(parts)) if parts.hostname else None
    except ValueError:
        return None


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
