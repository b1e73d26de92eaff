"""Certificate of the scrambler (Lemma2Exact) where SciPy's binomial CDF underflows:
ε at δ = 1e-280 and δ at ε = 3.4 (CPU time), run it in each checkout to compare two versions."""

import math
import time

from crowdhide.accounting.scrambler import bounds
from crowdhide.accounting.scrambler.curves import BoundCurve, per_tail

c = BoundCurve(
    eps0=math.inf,
    point=per_tail(
        lambda t: bounds.Lemma2Exact(targets=100, sigma=0.0, n=10, dummies=72000, log_tail=t)
    ),
)
t = time.process_time()
print(
    "delta(3.4)",
    c.log_delta(3.4) / math.log(10),
    "eps(1e-280)",
    c.epsilon(1e-280),
    "cpu",
    time.process_time() - t,
)
