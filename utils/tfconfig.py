"""TF_CONFIG: host lists, cluster specs and the JSON every task of a cluster reads.

``MultiWorkerMirroredStrategy`` and ``ParameterServerStrategy`` learn the cluster from the
``TF_CONFIG`` environment variable: the addresses of all tasks (``cluster``) and which one this
process is (``task``). Notebook 02 writes one by hand; these helpers build and **validate**
them (empty entries, bad ports, duplicates, more than one chief, a task index outside its
job, ...) with clear ``ValueError`` s::

    tf_config_for_task(workers=["node1:2222", "node2:2222"], task="worker:1")
    tf_configs_for_hosts(workers=["node1", "node2"], ps=["node3"], default_port=2222)
    cluster, task_type, index = parse_tf_config(os.environ["TF_CONFIG"])

On the command line, ``python -m utils.tfconfig --workers node1,node2 --port 2222 --task
worker:0`` prints the JSON for ``export TF_CONFIG=...`` (``docs/cluster.md``). Local clusters
(:mod:`infra.cluster`) use the same functions. Introduced in notebook 02. NumPy-free and
TensorFlow-free.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable, Mapping, Sequence

TASK_TYPES = ("chief", "worker", "ps", "evaluator")


# --------------------------------------------------------------------------------------------
# Host lists -> cluster spec -> per-task JSON
# --------------------------------------------------------------------------------------------
_HOSTNAME_RE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$")


def parse_address(entry: str, default_port: int | None = None) -> tuple[str, int]:
    """Split ``"host:port"`` (or ``"host"`` with ``default_port``, or ``"[ipv6]:port"``).

    Raises ``ValueError`` naming the entry for empty/whitespace entries, bad host names,
    missing or non-numeric ports and ports outside 1..65535. Used by
    :func:`build_cluster_spec` (notebook 02 and ``docs/cluster.md``).
    """
    if not isinstance(entry, str):
        raise ValueError(f"host entry {entry!r} is not a string")
    if entry != entry.strip() or not entry:
        raise ValueError(f"host entry {entry!r} is empty or has surrounding whitespace")
    host, port_text = entry, None
    if entry.startswith("["):  # [::1]:2222
        end = entry.find("]")
        if end < 0:
            raise ValueError(f"host entry {entry!r}: unclosed '[' in IPv6 address")
        host, rest = entry[1:end], entry[end + 1 :]
        if rest:
            if not rest.startswith(":"):
                raise ValueError(f"host entry {entry!r}: expected ':port' after ']'")
            port_text = rest[1:]
        if not host or not all(c in "0123456789abcdefABCDEF:." for c in host):
            raise ValueError(f"host entry {entry!r}: {host!r} is not an IPv6 address")
    else:
        if entry.count(":") > 1:
            raise ValueError(f"host entry {entry!r}: write IPv6 addresses as '[addr]:port'")
        if ":" in entry:
            host, port_text = entry.split(":")
        if not _HOSTNAME_RE.match(host):
            raise ValueError(f"host entry {entry!r}: {host!r} is not a valid host name")
    if port_text is None:
        if default_port is None:
            raise ValueError(f"host entry {entry!r} has no port and no default_port was given")
        port = default_port
    else:
        if not port_text.isdigit():
            raise ValueError(f"host entry {entry!r}: port {port_text!r} is not a number")
        port = int(port_text)
    if not 1 <= port <= 65535:
        raise ValueError(f"host entry {entry!r}: port {port} is outside 1..65535")
    return host, port


def _format_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _as_list(hosts: str | Iterable[str] | None) -> list[str]:
    if hosts is None:
        return []
    if isinstance(hosts, str):  # "node1,node2" as from a shell variable
        return [h for h in (p.strip() for p in hosts.split(",")) if h] if hosts.strip() else []
    return list(hosts)


def build_cluster_spec(
    workers: str | Iterable[str],
    ps: str | Iterable[str] | None = None,
    chief: str | Iterable[str] | None = None,
    evaluator: str | Iterable[str] | None = None,
    default_port: int | None = None,
) -> dict[str, list[str]]:
    """Validate host lists and return the ``cluster`` part of ``TF_CONFIG``.

    Each list holds ``"host:port"`` (or bare hosts with ``default_port``); a comma-separated
    string also works. At least one worker, at most one chief and one evaluator, and no
    address used twice. Used by notebook 02 and ``docs/cluster.md``.
    """
    groups = {
        "chief": _as_list(chief),
        "worker": _as_list(workers),
        "ps": _as_list(ps),
        "evaluator": _as_list(evaluator),
    }
    if not groups["worker"]:
        raise ValueError("the worker host list is empty: give at least one 'host:port'")
    for single in ("chief", "evaluator"):
        if len(groups[single]) > 1:
            raise ValueError(f"a cluster has at most one {single}, got {groups[single]}")
    return _distinct_addresses({t: entries for t, entries in groups.items() if entries}, default_port)


def _distinct_addresses(
    cluster: Mapping[str, Sequence[str]], default_port: int | None = None
) -> dict[str, list[str]]:
    """The cluster's entries as ``host:port``; ``ValueError`` if an address is used twice."""
    spec: dict[str, list[str]] = {}
    seen: dict[str, str] = {}
    for task_type, entries in cluster.items():
        addresses = []
        for i, entry in enumerate(entries):
            address = _format_address(*parse_address(entry, default_port))
            if address in seen:
                raise ValueError(
                    f"address {address} is used twice ({seen[address]} and {task_type}:{i}); "
                    "tasks on the same machine need different ports"
                )
            seen[address] = f"{task_type}:{i}"
            addresses.append(address)
        spec[task_type] = addresses
    return spec


def parse_task(task: str | tuple[str, int]) -> tuple[str, int]:
    """``"worker:1"`` or ``("worker", 1)`` -> ``("worker", 1)``, checking the task type."""
    if isinstance(task, str):
        if task.count(":") != 1:
            raise ValueError(f"task {task!r}: write it as 'type:index', e.g. 'worker:0'")
        task_type, index_text = task.split(":")
        if not index_text.isdigit():
            raise ValueError(f"task {task!r}: index {index_text!r} is not a number")
        task = (task_type, int(index_text))
    task_type, index = task
    if task_type not in TASK_TYPES:
        raise ValueError(f"task type {task_type!r} is not one of {TASK_TYPES}")
    return task_type, int(index)


def make_tf_config(cluster: Mapping[str, Sequence[str]], task: str | tuple[str, int]) -> str:
    """The ``TF_CONFIG`` JSON for one task of ``cluster`` (checked: the task must exist)."""
    task_type, index = parse_task(task)
    if task_type not in cluster:
        raise ValueError(f"task {task_type}:{index}: the cluster has no {task_type!r} job")
    if not 0 <= index < len(cluster[task_type]):
        raise ValueError(
            f"task {task_type}:{index}: index out of range, the {task_type} job has "
            f"{len(cluster[task_type])} task(s)"
        )
    return json.dumps(
        {"cluster": {k: list(v) for k, v in cluster.items()}, "task": {"type": task_type, "index": index}}
    )


def parse_tf_config(text: str) -> tuple[dict[str, list[str]], str, int]:
    """Inverse of :func:`make_tf_config`: ``(cluster, task_type, task_index)``, validated."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"TF_CONFIG is not valid JSON: {err}") from None
    if not isinstance(data, dict) or "cluster" not in data or "task" not in data:
        raise ValueError("TF_CONFIG needs the keys 'cluster' and 'task'")
    cluster = {k: list(v) for k, v in data["cluster"].items()}
    task = data["task"]
    task_type, index = parse_task((task.get("type", ""), task.get("index", 0)))
    make_tf_config(cluster, (task_type, index))  # validates that the task exists
    return cluster, task_type, index


def tf_config_for_task(
    workers: str | Iterable[str],
    task: str | tuple[str, int],
    ps: str | Iterable[str] | None = None,
    chief: str | Iterable[str] | None = None,
    evaluator: str | Iterable[str] | None = None,
    default_port: int | None = None,
) -> str:
    """Host lists + one task -> its ``TF_CONFIG`` JSON (what each machine exports).

    Used in notebook 02 and ``docs/cluster.md`` (``python -m utils.tfconfig``).
    """
    spec = build_cluster_spec(workers, ps=ps, chief=chief, evaluator=evaluator, default_port=default_port)
    return make_tf_config(spec, task)


def tf_configs_for_hosts(
    workers: str | Iterable[str],
    ps: str | Iterable[str] | None = None,
    chief: str | Iterable[str] | None = None,
    evaluator: str | Iterable[str] | None = None,
    default_port: int | None = None,
) -> dict[tuple[str, int], str]:
    """Host lists -> ``{(task_type, index): TF_CONFIG JSON}`` for every task of the cluster.

    Used in notebook 02 (the table of TF_CONFIGs) and by :class:`infra.cluster.LocalCluster`.
    """
    spec = build_cluster_spec(workers, ps=ps, chief=chief, evaluator=evaluator, default_port=default_port)
    return {(t, i): make_tf_config(spec, (t, i)) for t, hosts in spec.items() for i in range(len(hosts))}


def check_tf_configs(texts: Sequence[str]) -> dict[str, list[str]]:
    """Check the ``TF_CONFIG`` s of **all** tasks of one cluster together; return the cluster.

    Each text must be valid on its own (:func:`parse_tf_config`); together they must hold the
    same cluster (the same lists, in the same order), the cluster's addresses must all differ,
    and every task of the cluster must be claimed by exactly one text (two machines that both
    say ``worker:0`` wait for a ``worker:1`` that never comes). Raises ``ValueError`` naming
    the mistake. Used in notebook 09 (troubleshooting).
    """
    if not texts:
        raise ValueError("no TF_CONFIG given")
    parsed = [parse_tf_config(text) for text in texts]
    cluster = parsed[0][0]
    for n, (other, task_type, index) in enumerate(parsed[1:], start=1):
        if other != cluster:
            raise ValueError(
                f"TF_CONFIG {n} ({task_type}:{index}) has a different cluster than TF_CONFIG 0: "
                f"{other} vs {cluster}; every task must get the same lists in the same order"
            )
    _distinct_addresses(cluster)
    claimed: dict[str, int] = {}
    for task_type, index, n in ((t, i, n) for n, (_, t, i) in enumerate(parsed)):
        name = f"{task_type}:{index}"
        if name in claimed:
            raise ValueError(f"TF_CONFIG {claimed[name]} and {n} both say task {name}: check the task index")
        claimed[name] = n
    missing = [f"{t}:{i}" for t, hosts in cluster.items() for i in range(len(hosts)) if f"{t}:{i}" not in claimed]
    if missing:
        raise ValueError(f"no TF_CONFIG for task(s) {missing}: the cluster would wait for them forever")
    return cluster



# --------------------------------------------------------------------------------------------
# Command line: print a TF_CONFIG for one task of a real cluster
# --------------------------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    """``python -m utils.tfconfig --workers h1:2222,h2:2222 --task worker:0`` (docs/cluster.md)."""
    parser = argparse.ArgumentParser(
        prog="python -m utils.tfconfig",
        description="Print the TF_CONFIG JSON of one task of a multi-machine cluster.",
    )
    parser.add_argument("--workers", required=True, help="comma-separated host[:port] list")
    parser.add_argument("--ps", default=None, help="parameter servers, host[:port],...")
    parser.add_argument("--chief", default=None, help="the chief's host[:port]")
    parser.add_argument("--evaluator", default=None, help="the evaluator's host[:port]")
    parser.add_argument("--port", type=int, default=None, help="port for hosts without one")
    parser.add_argument("--task", required=True, help="this machine's task, e.g. worker:0")
    ns = parser.parse_args(argv)
    try:
        print(
            tf_config_for_task(
                ns.workers, ns.task, ps=ns.ps, chief=ns.chief, evaluator=ns.evaluator, default_port=ns.port
            )
        )
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
