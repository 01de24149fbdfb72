"""``t9k list``, ``t9k describe`` and ``t9k top``: what jobs there are, one
job in full, and who holds the GPUs."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from t9k_operator.cli import dispatch, render, top
from t9k_operator.cli.common import (
    EXIT_OK,
    client_for,
    name_arg,
    output_arg,
    parse_duration,
    split_name,
    use_colour,
)
from t9k_operator.registry import views as views_of_integrations
from t9k_operator.sdk import Client, T9kError, views


def list_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-A", "--all-namespaces", action="store_true", help="jobs of every namespace")
    p.add_argument("--kind", action="append", help="only jobs of this kind (repeatable)")
    p.add_argument(
        "-w",
        "--watch",
        action="store_true",
        help="after the table, print each job again when it changes",
    )
    p.add_argument("--interval", type=parse_duration, default=2.0, help=argparse.SUPPRESS)
    output_arg(p, ("json", "yaml", "wide", "name"))


def cmd_list(args: argparse.Namespace) -> int:
    with client_for(args) as client:
        jobs = client.list(all_namespaces=args.all_namespaces, kinds=args.kind)
        if args.output in ("json", "yaml"):
            doc = {"apiVersion": "v1", "kind": "List", "items": jobs}
            sys.stdout.write(render.dump([doc], args.output))
            return EXIT_OK
        if args.output == "name":
            sys.stdout.write(render.names(jobs))
            return EXIT_OK
        wide = args.output == "wide"
        colour = use_colour(sys.stdout)
        cluster = dispatch.shows_cluster(jobs, wide)  # decided once: --watch keeps the columns
        headers = render.job_headers(args.all_namespaces, wide, cluster)
        pods = client.pods(all_namespaces=args.all_namespaces)
        workloads = _workloads(client, jobs, args)
        rows = {_key(j): _row(j, pods, args, cluster, workloads) for j in jobs}
        if not rows and not args.watch:
            where = "any namespace" if args.all_namespaces else f"namespace {client.namespace}"
            print(f"No jobs found in {where}.", file=sys.stderr)
            return EXIT_OK
        widths = render.widths(headers, list(rows.values()))
        sys.stdout.write(render.table(headers, list(rows.values()), colour, widths=widths))
        sys.stdout.flush()
        if not args.watch:
            return EXIT_OK
        # kubectl's --watch: a job's row again when it changes (not for the
        # DURATION and AGE that tick by themselves), "deleted" when it goes.
        ticking = {headers.index("DURATION"), *([headers.index("AGE")] if wide else [])}

        def steady(row: list[str]) -> list[str]:
            return [c for i, c in enumerate(row) if i not in ticking]

        while True:
            time.sleep(args.interval)
            jobs = client.list(all_namespaces=args.all_namespaces, kinds=args.kind)
            pods = client.pods(all_namespaces=args.all_namespaces)
            workloads = _workloads(client, jobs, args) if cluster else []
            now_rows = {_key(j): _row(j, pods, args, cluster, workloads) for j in jobs}
            for key, row in now_rows.items():
                if key not in rows or steady(rows[key]) != steady(row):
                    sys.stdout.write(
                        render.table(headers, [row], colour, widths=widths, header=False)
                    )
            for key in rows.keys() - now_rows.keys():
                print(f"{key[1]}/{key[2]} deleted")
            sys.stdout.flush()
            rows = now_rows


def _key(job: dict[str, Any]) -> tuple[str, str, str]:
    return (str(job["metadata"].get("namespace")), str(job["kind"]), str(job["metadata"]["name"]))


def _workloads(
    client: Client, jobs: list[dict[str, Any]], args: argparse.Namespace
) -> dispatch.Workloads:
    """The Workloads that say where the listed jobs handed over to MultiKueue
    run; none read when no job is; None when the person may not read them."""
    if not any(views.handed_over(j) for j in jobs):
        return []
    return dispatch.readable(lambda: client.workloads(all_namespaces=args.all_namespaces))


def _row(
    job: dict[str, Any],
    pods: list[dict[str, Any]],
    args: argparse.Namespace,
    cluster: bool,
    workloads: dispatch.Workloads,
) -> list[str]:
    return render.list_row(
        job,
        pods,
        views.now_utc(),
        all_namespaces=args.all_namespaces,
        wide=args.output == "wide",
        cluster=cluster,
        workloads=workloads,
    )


def describe_args(p: argparse.ArgumentParser) -> None:
    name_arg(p)
    for view in views_of_integrations():
        view.add_arguments("describe", p)


def cmd_describe(args: argparse.Namespace) -> int:
    kind, name = split_name(args.name)
    with client_for(args) as client:
        job = client.get(name, kind)
        pods = client.pods(job)
        events = client.events(job, pods)
        workloads = (
            dispatch.readable(lambda: client.workloads(job)) if views.handed_over(job) else []
        )
        fields: dict[str, list[tuple[str, str]]] = {}
        for view in views_of_integrations():
            fields.setdefault(view.head_after, []).extend(view.fields(args, job, pods))
        tb = None
        if (job.get("status") or {}).get("tensorboard"):
            try:
                tb = client.tensorboard(name, job["metadata"]["namespace"])
            except T9kError:
                tb = None
    sys.stdout.write(
        render.describe(
            job,
            pods,
            events,
            views.now_utc(),
            tensorboard=tb,
            colour=use_colour(sys.stdout),
            fields=fields,
            workloads=workloads,
        )
    )
    return EXIT_OK


def top_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "what",
        choices=("nodes", "jobs"),
        help="nodes: GPUs per node and who holds them; jobs: GPUs per job",
    )
    p.add_argument(
        "-A", "--all-namespaces", action="store_true", help="top jobs: of every namespace"
    )
    for view in views_of_integrations():
        view.add_arguments("top", p)


def cmd_top(args: argparse.Namespace) -> int:
    with client_for(args) as client:
        if args.what == "nodes":
            nodes = views.node_usage(client.nodes(), client.pods(all_namespaces=True))
            sys.stdout.write(top.top_nodes(nodes))
            return EXIT_OK
        jobs = client.list(all_namespaces=args.all_namespaces)
        pods = client.pods(all_namespaces=args.all_namespaces)
        namespace = None if args.all_namespaces else client.namespace
    rows = views.job_usage(jobs, pods, views.now_utc())
    columns = [
        c
        for view in views_of_integrations()
        if rows and (c := view.top_jobs(args, jobs, pods, namespace))
    ]
    text = top.top_jobs(rows, args.all_namespaces, columns)
    if not text:
        print("No job holds GPUs or pods.", file=sys.stderr)
    for note in (c.note for c in columns if text and c.note):
        print(note, file=sys.stderr)
    sys.stdout.write(text)
    return EXIT_OK
