"""``crowdhide netdp epsilon|calibrate|audit``: network DP of token walks (seed 001)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from crowdhide.cli._output import JsonFlag, emit

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add the ``netdp`` command group to ``app``."""
    group = typer.Typer(
        help="Network DP of token walks on a ring or the complete graph.", no_args_is_help=True
    )
    app.add_typer(group, name="netdp")

    @group.command("epsilon")
    def epsilon(
        topology: Annotated[str, typer.Option("--topology", help="ring | complete")],
        task: Annotated[str, typer.Option("--task", help="sum | histogram | sgd")],
        n: Annotated[int, typer.Option("--n", help="Number of users.")],
        eps0: Annotated[float, typer.Option("--eps0", help="Per-contribution (local) epsilon.")],
        delta: Annotated[float, typer.Option("--delta", help="delta (used for every slack).")],
        rounds: Annotated[int | None, typer.Option("--rounds", help="Ring laps K.")] = None,
        steps: Annotated[int | None, typer.Option("--steps", help="Walk length T.")] = None,
        colluders: Annotated[int, typer.Option("--colluders", help="Coalition size c.")] = 1,
        domain_size: Annotated[int, typer.Option("--domain-size", help="Histogram L.")] = 10,
        as_json: JsonFlag = False,
    ) -> None:
        """Network-DP guarantee (corrected theorem) next to the local-DP baseline."""
        from crowdhide.netdp import guarantees as g

        if topology not in ("ring", "complete"):
            raise ValueError(f"topology must be 'ring' or 'complete', got {topology!r}")
        if task not in ("sum", "histogram", "sgd"):
            raise ValueError(f"task must be 'sum', 'histogram' or 'sgd', got {task!r}")
        if topology == "ring":
            if rounds is None:
                raise ValueError("rounds must be given (--rounds) for the ring, got None")
            if task == "sum":
                res = g.theorem1(
                    n=n,
                    rounds=rounds,
                    eps0=eps0,
                    delta0=delta,
                    delta_slack=delta,
                    colluders=colluders,
                )
            elif task == "histogram":
                if colluders != 1:
                    raise ValueError(f"colluders must be 1 on the ring, got {colluders}")
                res = g.theorem2(
                    n=n,
                    rounds=rounds,
                    epsilon=eps0,
                    delta=delta,
                    delta_slack=delta,
                    domain_size=domain_size,
                )
            else:
                raise ValueError("task 'sgd' needs --topology complete, got ring")
            contributions = float(rounds)
        else:
            if steps is None:
                raise ValueError("steps must be given (--steps) for the complete graph, got None")
            common: dict[str, Any] = {"n": n, "steps": steps, "eps0": eps0, "colluders": colluders}
            if task == "sum":
                res = g.theorem3(delta0=delta, delta_slack=delta, delta_hat=delta, **common)
            elif task == "histogram":
                res = g.theorem6(delta0=delta, delta_slack=delta, delta_hat=delta, **common)
            else:
                res = g.theorem4(delta=delta, delta_hat=delta, **common)
            contributions, _ = g.visit_bound(steps=steps, n=n, delta_hat=delta)
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

    @group.command("calibrate")
    def calibrate(
        topology: Annotated[str, typer.Option("--topology", help="complete")],
        task: Annotated[str, typer.Option("--task", help="sgd")],
        n: Annotated[int, typer.Option("--n", help="Number of users.")],
        steps: Annotated[int, typer.Option("--steps", help="Walk length T.")],
        epsilon: Annotated[float, typer.Option("--epsilon", help="Target network epsilon.")],
        delta: Annotated[float, typer.Option("--delta", help="Target delta.")],
        lipschitz: Annotated[float, typer.Option("--lipschitz", help="Lipschitz L.")] = 1.0,
        cap: Annotated[
            float, typer.Option("--cap-factor", help="Cap c: c T/n contributions.")
        ] = 1.25,
        as_json: JsonFlag = False,
    ) -> None:
        """Noise σ for private SGD on the complete graph (Lemma 1 numerics, App. F)."""
        import math

        from crowdhide.netdp import guarantees as g

        if topology != "complete" or task != "sgd":
            raise ValueError(
                f"calibrate supports --topology complete --task sgd, got {topology}/{task}"
            )
        contributions = math.floor(cap * steps / n)
        if contributions < 1:
            raise ValueError(f"cap-factor * steps / n must be >= 1, got {cap * steps / n}")
        sigma = g.sgd_calibrate_sigma(
            n=n, contributions=contributions, epsilon=epsilon, delta=delta, lipschitz=lipschitz
        )
        code = g.code_sigmas(n=n, steps=steps, epsilon=epsilon, delta=delta, lipschitz=lipschitz)
        record = {
            "topology": topology,
            "task": task,
            "n": n,
            "steps": steps,
            "epsilon": epsilon,
            "delta": delta,
            "lipschitz": lipschitz,
            "contributions_cap": contributions,
            "sigma": sigma,
            "sigma_over_L": sigma / lipschitz,
            "authors_code_sigma_network": code["network"],
            "authors_code_sigma_local": code["local"],
            "authors_code_sigma_central": code["central"],
        }
        emit(record, as_json=as_json, title="Calibrated noise (network DP-SGD)")

    @group.command("audit")
    def audit(
        topology: Annotated[str, typer.Option("--topology", help="complete")],
        n: Annotated[int, typer.Option("--n", help="Number of users.")],
        steps: Annotated[int, typer.Option("--steps", help="Walk length T.")],
        eps0: Annotated[float, typer.Option("--eps0", help="Local epsilon of a contribution.")],
        delta: Annotated[float, typer.Option("--delta", help="delta.")],
        seed: Annotated[int, typer.Option("--seed", help="Walk seed.")] = 0,
        colluders: Annotated[int, typer.Option("--colluders", help="Coalition size c.")] = 1,
        known_peers: Annotated[
            bool, typer.Option("--known-peers", help="Senders/receivers visible (App. G).")
        ] = False,
        group_ratio: Annotated[
            float,
            typer.Option(
                "--group-ratio",
                help="0: a certificate per cycle length. >0 (default 0.003): lengths above 64 "
                "share geometric bins of this relative width, each bin certified by a profile "
                "dominating all its lengths (still a certificate; faster, slightly looser).",
            ),
        ] = 0.003,
        as_json: JsonFlag = False,
    ) -> None:
        """Per-pair losses on a sampled walk (Gaussian sums, σ classic-calibrated to eps0)."""
        import contextlib

        from crowdhide.netdp._noise import classic_gaussian_sigma
        from crowdhide.netdp.audit import CycleMechanism, sample_audit

        if topology != "complete":
            raise ValueError(f"audit supports --topology complete, got {topology!r}")
        sigma = classic_gaussian_sigma(epsilon=eps0, delta=delta)
        if as_json:
            progress: contextlib.AbstractContextManager[object] = contextlib.nullcontext()
        else:
            from rich.console import Console

            progress = Console(stderr=True).status(
                "sampling the walk and composing per-pair losses"
            )
        with progress:
            res = sample_audit(
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
