"""``crowdhide net ...``: credentials of runs over mutual TLS.

* ``net pki --hosts H --out DIR`` — a CA and every host's key and certificate in one folder
  (one machine, the driver starts the hosts);
* enrolment of nodes that keep their own keys (``crowdhide node init`` writes a card):
  ``net ca init --out CA``, ``net ca sign --ca CA CARD``, ``net directory --ca CA --out
  DIRECTORY.toml CARD...`` (a directory of the nodes signed with the CA key);
* ``net split PLAN.toml --nodes N --block-size B --out DIR`` — a simulation's source rows cut
  into one data file per node daemon (``crowdhide node serve --data``); with
  ``--coordinator-plan OUT.toml`` also the coordinator's plan, which holds no row
  (``[data] held_by = "nodes"``, the domains the files' codes were made with).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from crowdhide.cli._options import check_output_dir, int_option, output_path
from crowdhide.cli._output import JsonFlag, emit
from crowdhide.errors import InvalidParameterError, OutputPathError

__all__ = ["register"]


net_app = typer.Typer(help="Real runs over mutual TLS: credentials.", no_args_is_help=True)


@net_app.command("pki")
def pki(
    hosts: Annotated[int, int_option("--hosts", "Number of node hosts.", low=1, high=256)] = 3,
    out: Annotated[
        Path, typer.Option("--out", help="Directory to write.", parser=output_path)
    ] = Path("pki"),
    days: Annotated[int, int_option("--days", "Validity in days.", low=1, high=3650)] = 365,
    force: Annotated[
        bool, typer.Option("--force", help="Replace an existing CA in --out.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Write a CA and one ECDSA P-256 certificate per node host (keys mode 0600)."""
    from crowdhide.backends.tls.pki import make_pki

    result = make_pki(hosts=hosts, out=check_output_dir(out), days=days, overwrite=force)
    emit(
        {
            "ca": str(result.ca_cert),
            "hosts": [h.name for h in result.hosts],
            "certificates": [str(h.cert) for h in result.hosts],
            "keys": [str(h.key) for h in result.hosts],
            "out": str(out),
            "days": days,
            "force": force,  # echoed: with no CA in --out it changes nothing else
        },
        as_json=as_json,
        title="PKI written (private keys mode 0600)",
    )


ca_app = typer.Typer(help="A CA that signs nodes' certificate requests.", no_args_is_help=True)
net_app.add_typer(ca_app, name="ca")


@ca_app.command("init")
def ca_init(
    out: Annotated[Path, typer.Option("--out", help="CA folder to write.")] = Path("ca"),
    days: Annotated[int, int_option("--days", "Validity in days.", low=1, high=3650)] = 365,
    as_json: JsonFlag = False,
) -> None:
    """Write a CA certificate and key (key mode 0600)."""
    from crowdhide.backends.tls.pki import make_ca

    if (out / "ca.key").exists():
        raise OutputPathError(f"--out already holds a CA key, got {str(out)!r}")
    cert = make_ca(out=check_output_dir(out), days=days)
    emit({"ca": str(cert), "key": str(out / "ca.key")}, as_json=as_json, title="CA written")


@ca_app.command("sign")
def ca_sign(
    card: Annotated[Path, typer.Argument(help="card.json written by `crowdhide node init`.")],
    ca: Annotated[Path, typer.Option("--ca", help="CA folder (`net ca init`).")] = Path("ca"),
    days: Annotated[int, int_option("--days", "Validity in days.", low=1, high=3650)] = 365,
    as_json: JsonFlag = False,
) -> None:
    """Sign a node's certificate request; the certificate goes back to the node."""
    from crowdhide.backends.tls.enrol import ca_sign as sign

    cert = sign(ca, card, days=days)
    emit({"certificate": str(cert), "card": str(card)}, as_json=as_json, title="signed")


@net_app.command("directory")
def directory(
    cards: Annotated[list[Path], typer.Argument(help="Cards of the enrolled nodes.")],
    ca: Annotated[Path, typer.Option("--ca", help="CA folder (`net ca init`).")] = Path("ca"),
    out: Annotated[Path, typer.Option("--out", help="Directory file to write.")] = Path(
        "directory.toml"
    ),
    as_json: JsonFlag = False,
) -> None:
    """Write the nodes' directory (id, address, certificate fingerprint, sealing key),
    signed with the CA key."""
    from crowdhide.backends.tls.enrol import load_directory, make_directory

    path = make_directory(ca, cards, out=out)
    entries = load_directory(path, ca=ca / "ca.pem").entries
    emit(
        {"directory": str(path), "nodes": [f"{e.node} {e.address}" for e in entries]},
        as_json=as_json,
        title="directory written (signed by the CA)",
    )


def register(app: typer.Typer) -> None:
    """Add the ``net`` group to ``app``."""
    app.add_typer(net_app, name="net")


def split_command(
    plan_file: Annotated[Path, typer.Argument(help="PLAN.toml, or example:NAME.")],
    nodes: Annotated[int, int_option("--nodes", "Node daemons.", low=1, high=256)] = 3,
    block_size: Annotated[
        int, int_option("--block-size", "Nodes per block of the run.", low=1, high=10**9)
    ] = 2000,
    out: Annotated[
        Path, typer.Option("--out", help="Directory for rows-<id>.npz.", parser=output_path)
    ] = Path("rows"),
    coordinator_plan: Annotated[
        Path | None,
        typer.Option(
            "--coordinator-plan",
            help='Also write the coordinator\'s plan: [data] held_by = "nodes" (no row).',
            parser=output_path,
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Simulation: cut the plan's source rows into whole blocks, one contiguous range
    per node daemon, written as rows-<id>.npz (the daemon of node <id> reads only its
    own file)."""
    from crowdhide.backends.tls.node_rows import write_rows
    from crowdhide.plans.owner_rows import source_digests
    from crowdhide.plans.query import AggregateOverTable, load_query
    from crowdhide.plans.spec import load_spec

    spec = load_spec(plan_file)
    if spec.data.held_by is not None:
        raise InvalidParameterError(
            f"{plan_file}: data.held_by = {spec.data.held_by!r}: there are no rows here to "
            "split (give the simulation's plan, whose [data] generates or loads them)",
            parameter="data.held_by",
            value=spec.data.held_by,
        )
    query = load_query(spec, backend="tls")  # the rows are cut for node daemons
    sources = [g for g in query.plan.groups if g.role == "source"]
    total = sources[0].size
    blocks = -(-total // block_size)
    if blocks < nodes:
        raise InvalidParameterError(
            f"--nodes {nodes} is more than the {blocks} blocks of {total} rows "
            f"(--block-size {block_size})",
            parameter="--nodes",
            value=nodes,
        )
    digests = source_digests(query.setup) if isinstance(query, AggregateOverTable) else {}
    folder = check_output_dir(out)
    folder.mkdir(parents=True, exist_ok=True)
    files, ranges = [], []
    for i in range(nodes):
        first = min(total, (blocks * i // nodes) * block_size)
        stop = min(total, (blocks * (i + 1) // nodes) * block_size)
        columns = {g.name: {c: v[first:stop] for c, v in (g.data or {}).items()} for g in sources}
        path = folder / f"rows-{i}.npz"
        files.append(str(write_rows(path, first=first, columns=columns, digests=digests)))
        ranges.append(f"{first}..{stop - 1}")
    written = {}
    if coordinator_plan is not None:
        written["coordinator_plan"] = str(_coordinator_plan(plan_file, query, coordinator_plan))
    emit(
        {"files": files, "rows": ranges, "block_size": block_size, **written},
        as_json=as_json,
        title="rows split (one file per node daemon)",
    )


net_app.command("split")(split_command)


def _coordinator_plan(plan_file: Path, query: object, out: Path) -> Path:
    """Write the plan of the split population for a coordinator that holds no row: its
    schema, row count and the grouping domains the files' codes were made with."""
    import tomllib

    from crowdhide.plans.examples import resolve_plan
    from crowdhide.plans.query import AggregateOverTable
    from crowdhide.plans.spec import held_plan_text

    if not isinstance(query, AggregateOverTable):
        raise InvalidParameterError(
            "--coordinator-plan applies to aggregate plans only (query.kind = 'aggregate')",
            parameter="--coordinator-plan",
            value=str(out),
        )
    setup = query.setup
    sets = setup.query.grouping_sets
    domains = {
        c: list(d)
        for s, ds in zip(sets, setup.domains, strict=True)
        for c, d in zip(s, ds, strict=True)
    }
    used = [*dict.fromkeys(c for s in sets for c in s), *setup.query.value_columns]
    raw = tomllib.loads(resolve_plan(plan_file).read_text(encoding="utf-8"))
    text = held_plan_text(
        raw,
        rows=query.rows,
        columns=list(dict.fromkeys(used)),
        domains=domains,
        header=f"# The coordinator's plan of {plan_file}: the rows are held by the node daemons.",
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return out
