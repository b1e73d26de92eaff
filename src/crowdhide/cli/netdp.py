"""``crowdhide netdp epsilon|calibrate|audit``: network DP of token walks (seed 001)."""

from __future__ import annotations

import math
from typing import Annotated, Any

import typer

from crowdhide.cli._engine_progress import spinner
from crowdhide.cli._options import (
    MAX_EPSILON,
    MAX_N,
    AllowUnmetFlag,
    delta_option,
    finish_target,
    int_option,
    option_names,
    real_option,
    seed_option,
)
from crowdhide.cli._output import JsonFlag, emit
from crowdhide.errors import ResourceLimitError, UnmetTargetError

__all__ = ["register"]

#: Library parameters fed from one option (messages name the option).
_NAMES = {
    "delta_slack": "--delta",
    "delta_hat": "--delta",
    "delta0": "--delta",
    "delta": "--delta",
    "eps0": "--eps0",
    "colluders": "--colluders",
    "domain_size": "--domain-size",
    "rounds": "--rounds",
    "steps": "--steps",
    "contributions": "--cap-factor * --steps / --n",
    "lipschitz": "--lipschitz",
    "n": "--n",
}
#: Rounds and walk lengths: the guarantees are closed forms, valid far beyond any real walk.
_MAX_STEPS = 10**12
#: netdp audit: per-user arrays of n entries and one certificate per distinct cycle length.
_AUDIT_MAX_N = 10**5
_AUDIT_MAX_STEPS = 10**7
#: netdp audit without --group-ratio costs about 20 ms per distinct cycle length; more
#: (expected) lengths than this would take minutes.
_AUDIT_MAX_LENGTHS = 3000

Topology = Annotated[str, typer.Option("--topology", help="ring | complete")]
Users = Annotated[int, int_option("--n", "Number of users.", low=2, high=MAX_N)]
Eps0 = Annotated[
    float,
    real_option(
        "--eps0",
        "Per-contribution (local) epsilon.",
        low=0.0,
        high=MAX_EPSILON,
        low_open=True,
    ),
]
Delta = Annotated[float, delta_option(help="delta (used for every slack).")]
Colluders = Annotated[int, int_option("--colluders", "Coalition size c (< n).", low=1, high=MAX_N)]
Steps = Annotated[int, int_option("--steps", "Walk length T.", low=1, high=_MAX_STEPS)]


def register(app: typer.Typer) -> None:
    """Add the ``netdp`` command group to ``app``."""
    group = typer.Typer(
        help="Network DP of token walks on a ring or the complete graph.", no_args_is_help=True
    )
    app.add_typer(group, name="netdp")

    @group.command("epsilon")
    def epsilon(
        topology: Topology,
        task: Annotated[str, typer.Option("--task", help="sum | histogram | sgd")],
        n: Users,
        eps0: Eps0,
        delta: Delta,
        rounds: Annotated[
            int | None, int_option("--rounds", "Ring laps K.", low=1, high=_MAX_STEPS)
        ] = None,
        steps: Annotated[
            int | None, int_option("--steps", "Walk length T.", low=1, high=_MAX_STEPS)
        ] = None,
        colluders: Colluders = 1,
        domain_size: Annotated[
            int, int_option("--domain-size", "Histogram L.", low=2, high=MAX_N)
        ] = 10,
        as_json: JsonFlag = False,
    ) -> None:
        """Network-DP guarantee (corrected theorem) next to the local-DP baseline."""
        if topology not in ("ring", "complete"):
            raise ValueError(f"--topology must be 'ring' or 'complete', got {topology!r}")
        if task not in ("sum", "histogram", "sgd"):
            raise ValueError(f"--task must be 'sum', 'histogram' or 'sgd', got {task!r}")
        with option_names(_NAMES):
            res, contributions = _guarantee(
                topology, task, n, eps0, delta, rounds, steps, colluders, domain_size
            )
            from crowdhide.netdp import guarantees as g

            ldp = g.ldp_baseline(
                contributions=contributions, eps0=eps0, delta0=delta, delta_slack=delta
            )
        record = {
            "topology": topology,
            "task": task,
            "n": n,
            "eps0": eps0,
            "delta_in": delta,
            "rounds": rounds,
            "steps": steps,
            "colluders": colluders,
            **res.to_dict(),
            "ldp_epsilon": ldp.epsilon,
            "ldp_delta": ldp.delta,
        }
        emit(
            record,
            as_json=as_json,
            title="Network DP guarantee",
            columns=[
                "topology",
                "task",
                "n",
                "theorem",
                "epsilon",
                "delta",
                "valid",
                "violations",
                "ldp_epsilon",
            ],
        )

    _register_calibrate(group)
    _register_audit(group)


def _guarantee(
    topology: str,
    task: str,
    n: int,
    eps0: float,
    delta: float,
    rounds: int | None,
    steps: int | None,
    colluders: int,
    domain_size: int,
) -> tuple[Any, float]:
    """The corrected theorem for (topology, task) and the contributions per user."""
    from crowdhide.netdp import guarantees as g

    if topology == "ring":
        if rounds is None:
            raise ValueError("--rounds must be given for the ring, got None")
        if task == "sum":
            res = g.ring_sum_guarantee(
                n=n, rounds=rounds, eps0=eps0, delta0=delta, delta_slack=delta, colluders=colluders
            )
        elif task == "histogram":
            if colluders != 1:
                raise ValueError(f"--colluders must be 1 on the ring, got {colluders}")
            res = g.ring_histogram_guarantee(
                n=n,
                rounds=rounds,
                epsilon=eps0,
                delta=delta,
                delta_slack=delta,
                domain_size=domain_size,
            )
        else:
            raise ValueError("--task sgd needs --topology complete, got ring")
        return res, float(rounds)
    if steps is None:
        raise ValueError("--steps must be given for the complete graph, got None")
    common: dict[str, Any] = {"n": n, "steps": steps, "eps0": eps0, "colluders": colluders}
    if task == "sum":
        res = g.complete_sum_guarantee(delta0=delta, delta_slack=delta, delta_hat=delta, **common)
    elif task == "histogram":
        res = g.complete_histogram_guarantee(delta0=delta, delta_slack=delta, delta_hat=delta, **common)
    else:
        res = g.complete_sgd_guarantee(delta=delta, delta_hat=delta, **common)
    contributions, _ = g.visit_bound(steps=steps, n=n, delta_hat=delta)
    return res, contributions


def _register_calibrate(group: typer.Typer) -> None:
    @group.command("calibrate")
    def calibrate(
        topology: Annotated[str, typer.Option("--topology", help="complete")],
        task: Annotated[str, typer.Option("--task", help="sgd")],
        n: Users,
        steps: Steps,
        epsilon: Annotated[
            float,
            # Smaller targets need σ beyond e^700 L: the search overflows before refusing.
            real_option("--epsilon", "Target network epsilon.", low=1e-9, high=MAX_EPSILON),
        ],
        delta: Annotated[float, delta_option(help="Target delta.")],
        lipschitz: Annotated[
            float, real_option("--lipschitz", "Lipschitz L.", low=1e-6, high=1e6)
        ] = 1.0,
        cap: Annotated[
            float,
            real_option("--cap-factor", "Cap c: c T/n contributions.", low=1.0, high=1e3),
        ] = 1.25,
        allow_unmet: AllowUnmetFlag = False,
        as_json: JsonFlag = False,
    ) -> None:
        """Noise σ for private SGD on the complete graph (Lemma 1 numerics, App. F).

        Exit code 3 if no σ reaches the target (unless --allow-unmet).
        """
        from crowdhide.netdp import guarantees as g

        if topology != "complete" or task != "sgd":
            raise ValueError(
                f"calibrate supports --topology complete --task sgd, got {topology}/{task}"
            )
        contributions = math.floor(cap * steps / n)
        if contributions < 1:
            raise ValueError(f"--cap-factor * --steps / --n must be >= 1, got {cap * steps / n:g}")
        sigma: float | None
        with option_names(_NAMES):
            try:
                sigma = g.sgd_calibrate_sigma(
                    n=n,
                    contributions=contributions,
                    epsilon=epsilon,
                    delta=delta,
                    lipschitz=lipschitz,
                )
            except UnmetTargetError as exc:
                sigma, reason = None, str(exc)
            code = g.code_sigmas(
                n=n, steps=steps, epsilon=epsilon, delta=delta, lipschitz=lipschitz
            )
        record = {
            "topology": topology,
            "task": task,
            "n": n,
            "steps": steps,
            "epsilon": epsilon,
            "delta": delta,
            "lipschitz": lipschitz,
            "contributions_cap": contributions,
            "target_met": sigma is not None,
            "sigma": sigma,
            "sigma_over_L": None if sigma is None else sigma / lipschitz,
            "authors_code_sigma_network": code["network"],
            "authors_code_sigma_local": code["local"],
            "authors_code_sigma_central": code["central"],
        }
        emit(record, as_json=as_json, title="Calibrated noise (network DP-SGD)")
        finish_target(
            sigma is not None,
            reason if sigma is None else "",
            allow_unmet=allow_unmet,
            as_json=as_json,
        )


def _register_audit(group: typer.Typer) -> None:
    @group.command("audit")
    def audit(
        topology: Annotated[str, typer.Option("--topology", help="complete")],
        n: Annotated[int, int_option("--n", "Number of users.", low=2, high=_AUDIT_MAX_N)],
        steps: Annotated[
            int, int_option("--steps", "Walk length T.", low=1, high=_AUDIT_MAX_STEPS)
        ],
        eps0: Annotated[
            float,
            real_option(
                "--eps0",
                "Local epsilon of a contribution (classic Gaussian calibration needs ε0 < 1).",
                low=0.0,
                high=1.0,
                low_open=True,
                high_open=True,
            ),
        ],
        delta: Annotated[float, delta_option(help="delta.")],
        seed: Annotated[int, seed_option("Walk seed.")] = 0,
        colluders: Colluders = 1,
        known_peers: Annotated[
            bool, typer.Option("--known-peers", help="Senders/receivers visible (App. G).")
        ] = False,
        group_ratio: Annotated[
            float,
            real_option(
                "--group-ratio",
                help="0: a certificate per cycle length. >0 (default 0.003): lengths above 64 "
                "share geometric bins of this relative width, each bin certified by a profile "
                "dominating all its lengths (still a certificate; faster, slightly looser).",
                low=0.0,
                high=10.0,
            ),
        ] = 0.003,
        as_json: JsonFlag = False,
    ) -> None:
        """Per-pair losses on a sampled walk (Gaussian sums, σ classic-calibrated to eps0)."""
        from crowdhide.netdp.noise import classic_gaussian_sigma
        from crowdhide.netdp.walk_accounting import CycleMechanism, account_sampled_walk

        if topology != "complete":
            raise ValueError(f"audit supports --topology complete, got {topology!r}")
        lengths = min(float(steps), n * (1.0 + math.log(max(steps / n, 1.0))))
        if group_ratio == 0.0 and lengths > _AUDIT_MAX_LENGTHS:
            raise ResourceLimitError(
                f"--n {n} --steps {steps} gives about {lengths:.0f} distinct cycle lengths "
                f"(one certificate each, > {_AUDIT_MAX_LENGTHS}: many minutes); pass "
                "--group-ratio 0.05 or reduce --n / --steps",
                parameter="steps",
                value=steps,
            )
        sigma = classic_gaussian_sigma(epsilon=eps0, delta=delta)
        with (
            spinner(not as_json, "sampling the walk and composing per-pair losses"),
            option_names(_NAMES),
        ):
            res = account_sampled_walk(
                n=n,
                steps=steps,
                delta=delta,
                rng=seed,
                colluders=colluders,
                known_peers=known_peers,
                group_ratio=group_ratio,
                mechanism=CycleMechanism(kind="gaussian", noise_multiplier=sigma),
            )
        record = {
            "topology": topology,
            "n": n,
            "steps": steps,
            "eps0": eps0,
            "delta": delta,
            "seed": seed,
            "colluders": colluders,
            "known_peers": known_peers,
            "group_ratio": group_ratio,
            "length_grouping": res.details.get("length_grouping", "exact"),
            "sigma_over_sensitivity": sigma,
            **res.summary,
        }
        emit(record, as_json=as_json, title="Per-pair network DP on a sampled walk")
