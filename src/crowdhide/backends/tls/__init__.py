"""Real decentralized runs: node-host processes talking mutual TLS 1.3 on fixed-size frames.

* :mod:`crowdhide.backends.tls.pki` — a run's CA and one ECDSA P-256 certificate per node host;
* :mod:`crowdhide.backends.tls.frames` — fixed-size frames whose payload is sealed end to end for
  the target node (X25519 + ChaCha20-Poly1305);
* :mod:`crowdhide.backends.tls.host` — a node-host process
  (``python -m crowdhide.backends.tls.host``), with its TLS links
  (:mod:`crowdhide.backends.tls.links`) and the frames it queues to send
  (:mod:`crowdhide.backends.tls.outgoing`);
* :mod:`crowdhide.backends.tls.relay` — a loopback relay recording the on-path observer's view;
* :mod:`crowdhide.backends.tls.backend` — :class:`~crowdhide.backends.tls.backend.TlsBackend`,
  the engine backend that moves every message as a frame between host processes.

Nothing here is imported by ``import crowdhide``. ``cryptography`` comes with the ``net``
extra: importing any module of this package without it raises
:class:`~crowdhide.errors.MissingExtraError` naming ``pip install 'crowdhide[net]'`` (exit
code 2 on the command line), before any host, key or file is made. The modules themselves
import it inside functions.
"""

from crowdhide._extras import require

__all__: list[str] = []

require("cryptography", purpose="the tls backend, crowdhide net and crowdhide node")
