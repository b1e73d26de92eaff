"""Shipping a job to a node host as a signed plan document (no code, no pickle).

The coordinator signs the canonical plan document (:mod:`crowdhide.engine.document`: named
programs, routes, countermeasures, run parameters, placement) with an Ed25519 key of its
own; every host is configured with the coordinator's *public* key and refuses a document
whose signature does not verify, whose version it does not read, or that names a program
its registry does not have (:class:`PlanRefusedError`, sent back as
:class:`~crowdhide.backends.tls.control.JobRefused`). A host receives the source rows of
the blocks it serves only, as arrays beside the document.

The run parameters say how hosts key their blocks' randomness: ``"randomness": "secret"``
(the default) — every host draws its own secret when it loads the job and keys its blocks'
generators with it, so neither the coordinator (which picks the seed) nor another host can
replay its sampling, dummies or shuffles — or ``"shared"``: the blocks are keyed by the
public seed alone, as on the local backend (reproducible, and replayable by every host).

Examples
--------
>>> signer = Signer.generate()
>>> sig = signer.sign(b"plan")
>>> verify(signer.public, b"plan", sig)
>>> verify(signer.public, b"plan!", sig)
Traceback (most recent call last):
...
crowdhide.backends.tls.shipping.PlanRefusedError: the plan's signature does not verify ...
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from crowdhide.backends.tls import control as ctl
from crowdhide.backends.tls.placement import Placement
from crowdhide.engine.backend import Job
from crowdhide.engine.blocks import BlockRows
from crowdhide.engine.document import (
    PlanDocumentError,
    canonical,
    digest,
    plan_document,
    plan_from_document,
)
from crowdhide.errors import InvalidParameterError

__all__ = ["PlanRefusedError", "Signer", "load_job", "ship_job", "verify"]


class PlanRefusedError(ValueError):
    """A host refuses a plan: bad signature, unknown version or program, malformed."""


@dataclass(frozen=True)
class Signer:
    """The coordinator's Ed25519 signing key (it never leaves the coordinator)."""

    public: bytes
    _key: Any = field(repr=False)

    @classmethod
    def generate(cls) -> Signer:
        """A fresh key pair."""
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        key = Ed25519PrivateKey.generate()
        raw = key.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        return cls(public=raw, _key=key)

    @classmethod
    def from_pem(cls, path: Any) -> Signer:
        """The signer of an ECDSA P-256 key in PEM (a node's or the coordinator's
        ``tls.key``); its public key is the DER SubjectPublicKeyInfo, the one in its
        certificate, so a daemon verifies plans with the key of the certificate it
        authenticated."""
        from pathlib import Path

        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec

        key = serialization.load_pem_private_key(Path(path).read_bytes(), password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise PlanRefusedError(f"{path} is not an ECDSA key")
        public = key.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        return cls(public=public, _key=key)

    def sign(self, data: bytes) -> bytes:
        """Signature of ``data`` (Ed25519, or ECDSA with SHA-256 for a PEM key)."""
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec

        if isinstance(self._key, ec.EllipticCurvePrivateKey):
            ecdsa: bytes = self._key.sign(data, ec.ECDSA(hashes.SHA256()))
            return ecdsa
        signature: bytes = self._key.sign(data)
        return signature


def verify(public: bytes, data: bytes, signature: bytes) -> None:
    """Raise :class:`PlanRefusedError` unless ``signature`` is ``public``'s over ``data``."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    if not public:
        raise PlanRefusedError("this node has no coordinator key to verify plans with")
    try:
        if len(public) == 32:
            Ed25519PublicKey.from_public_bytes(public).verify(signature, data)
        else:  # the DER public key of the coordinator's certificate
            key = serialization.load_der_public_key(public)
            if not isinstance(key, ec.EllipticCurvePublicKey):
                raise InvalidParameterError("not an ECDSA key", parameter="public")
            key.verify(signature, data, ec.ECDSA(hashes.SHA256()))
    except (InvalidSignature, ValueError):
        raise PlanRefusedError(
            "the plan's signature does not verify with the coordinator key this node trusts"
        ) from None


def ship_job(
    job: Job,
    signer: Signer,
    *,
    placement: Mapping[str, Any],
    owns: Callable[[str, int], bool] | None,
    receivers: tuple[str, ...],
    shared_seed: bool = False,
) -> ctl.LoadJob:
    """The :class:`~crowdhide.backends.tls.control.LoadJob` of the host owning ``owns``
    (``None``: a node daemon, which reads its own users' rows; no row is shipped).
    ``shared_seed``: the hosts key their blocks by the seed (reproducible, replayable)
    instead of their own secrets."""
    run = {
        "seed": job.seed,
        "block_size": job.block_size,
        "keep": sorted(job.keep),
        "randomness": "shared" if shared_seed else "secret",
    }
    blob = canonical(plan_document(job.plan, run=run, placement=placement))
    rows: dict[str, Any] = {}
    if owns is not None:
        mine = job.for_shard(owns)
        rows = {
            g.name: dict(g.data.parts)
            for g in mine.plan.groups
            if g.role == "source" and isinstance(g.data, BlockRows)
        }
    return ctl.LoadJob(plan=blob, signature=signer.sign(blob), rows=rows, receivers=receivers)


def load_job(message: ctl.LoadJob, *, coordinator: bytes) -> tuple[Job, str, Placement, bool]:
    """The job of a verified plan with the rows this host received, the plan's digest, its
    placement and whether its randomness is the shared seed's (else each host's secret)."""
    verify(coordinator, message.plan, message.signature)
    try:
        document = json.loads(message.plan)
        data = {}
        for g in document["groups"]:
            if g["role"] == "source":
                parts = message.rows.get(g["name"], {})
                data[g["name"]] = BlockRows(parts, tuple(g["columns"] or ()))
        plan = plan_from_document(document, data=data)
        run = document["run"]
        job = Job(
            plan=plan,
            seed=int(run["seed"]),
            block_size=int(run["block_size"]),
            keep=frozenset(run["keep"]),
        )
        placement = Placement(**document["placement"])
        if run["randomness"] not in ("secret", "shared"):
            raise InvalidParameterError(
                f"randomness must be 'secret' or 'shared', got {run['randomness']!r}",
                parameter="run.randomness",
                value=run["randomness"],
            )
    except PlanDocumentError as exc:
        raise PlanRefusedError(str(exc)) from None
    except (KeyError, TypeError, ValueError) as exc:
        raise PlanRefusedError(f"malformed plan: {type(exc).__name__}: {exc}") from None
    return job, digest(document), placement, run["randomness"] == "shared"
