"""Encryption at rest for endpoint API keys a project stores.

The Fernet key is derived from SECRET_KEY with HKDF, so there is no second
secret to manage; SECRET_KEY_FALLBACKS keep old keys readable after a rotation.
"""

from __future__ import annotations

import base64

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

_SALT = b"rta-studio/conduct"
_INFO = b"endpoint-api-keys/v1"


class KeyUnreadable(Exception):
    """The stored key was encrypted under a secret this deployment no longer has."""


def _fernet_for(secret: str) -> Fernet:
    hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=_SALT, info=_INFO)
    return Fernet(base64.urlsafe_b64encode(hkdf.derive(secret.encode())))


def _fernet() -> MultiFernet:
    secrets = [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]
    return MultiFernet([_fernet_for(secret) for secret in secrets])


def encrypt_secret(plain: str) -> str:
    return _fernet().encrypt(plain.encode()).decode()


def decrypt_secret(token: str) -> str:
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken as exc:
        raise KeyUnreadable(
            "This stored API key cannot be decrypted: SECRET_KEY changed without keeping the "
            "old one in SECRET_KEY_FALLBACKS. Enter the key again."
        ) from exc


def masked_hint(plain: str) -> str:
    """What a person may see of a key again: its start and last four characters."""
    plain = plain.strip()
    if len(plain) <= 8:
        return "•" * len(plain)
    prefix = plain[:3] if plain.startswith("sk-") else plain[:2]
    return f"{prefix}…{plain[-4:]}"
