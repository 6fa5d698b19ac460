"""utils.tfconfig: cluster specs and TF_CONFIG built from host lists, validated, and printed."""

from __future__ import annotations

import json

import pytest

from utils import tfconfig
from utils.tfconfig import (
    build_cluster_spec,
    make_tf_config,
    parse_address,
    parse_tf_config,
    tf_config_for_task,
    tf_configs_for_hosts,
)


def test_tf_config_round_trip():
    spec = build_cluster_spec(["n1:2222", "n2"], ps="n3:2223", chief="n0", default_port=2222)
    assert spec == {
        "chief": ["n0:2222"],
        "worker": ["n1:2222", "n2:2222"],
        "ps": ["n3:2223"],
    }
    for task_type, hosts in spec.items():
        for i in range(len(hosts)):
            text = make_tf_config(spec, (task_type, i))
            assert parse_tf_config(text) == (spec, task_type, i)
            assert json.loads(text)["task"] == {"type": task_type, "index": i}


def test_tf_configs_for_hosts_covers_every_task_and_ipv6():
    configs = tf_configs_for_hosts("a:1,b:2", ps=["[::1]:3"])
    assert sorted(configs) == [("ps", 0), ("worker", 0), ("worker", 1)]
    assert json.loads(configs[("ps", 0)])["cluster"]["ps"] == ["[::1]:3"]
    one = tf_config_for_task(["a:1", "b:2"], "worker:1")
    assert parse_tf_config(one)[1:] == ("worker", 1)


@pytest.mark.parametrize(
    ("workers", "kwargs", "message"),
    [
        ([], {}, "worker host list is empty"),
        ("", {}, "worker host list is empty"),
        (["a:1", ""], {}, "empty"),
        ([" a:1"], {}, "whitespace"),
        (["a"], {}, "no port"),
        (["a:x"], {}, "not a number"),
        (["a:0"], {}, "outside 1..65535"),
        (["a:70000"], {}, "outside 1..65535"),
        (["bad_host:1"], {}, "not a valid host name"),
        (["::1:2"], {}, "IPv6"),
        (["[::1:2"], {}, "unclosed"),
        (["a:1", "a:1"], {}, "used twice"),
        (["a:1"], {"ps": ["a:1"]}, "used twice"),
        (["a:1"], {"chief": ["b:1", "c:1"]}, "at most one chief"),
    ],
)
def test_bad_host_lists_give_clear_errors(workers, kwargs, message):
    with pytest.raises(ValueError, match=message):
        build_cluster_spec(workers, **kwargs)


@pytest.mark.parametrize(
    ("task", "message"),
    [
        ("worker:2", "out of range"),
        ("ps:0", "no 'ps' job"),
        ("boss:0", "not one of"),
        ("worker", "type:index"),
        ("worker:x", "not a number"),
    ],
)
def test_bad_tasks(task, message):
    with pytest.raises(ValueError, match=message):
        tf_config_for_task(["a:1", "b:1"], task)


def test_parse_tf_config_rejects_garbage():
    with pytest.raises(ValueError, match="not valid JSON"):
        parse_tf_config("{")
    with pytest.raises(ValueError, match="'cluster' and 'task'"):
        parse_tf_config('{"cluster": {}}')


def test_parse_address_defaults():
    assert parse_address("node-1.example.org", 2222) == ("node-1.example.org", 2222)
    assert parse_address("[fe80::1]:5") == ("fe80::1", 5)


def test_command_line(capsys):
    assert tfconfig.main(["--workers", "h1,h2", "--port", "2222", "--task", "worker:1"]) == 0
    cfg = json.loads(capsys.readouterr().out)
    assert cfg == {"cluster": {"worker": ["h1:2222", "h2:2222"]}, "task": {"type": "worker", "index": 1}}
    assert tfconfig.main(["--workers", "h1", "--task", "worker:0"]) == 2
    assert "no port" in capsys.readouterr().err


def _cluster_configs(workers, tasks):
    return [json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker", "index": i}}) for i in tasks]


def test_check_tf_configs_accepts_a_consistent_cluster():
    texts = list(tfconfig.tf_configs_for_hosts(["a:1", "b:1"], ps=["c:1"]).values())
    assert tfconfig.check_tf_configs(texts) == {"worker": ["a:1", "b:1"], "ps": ["c:1"]}


@pytest.mark.parametrize(
    "texts, message",
    [
        (_cluster_configs(["a:1", "b:1"], [0, 0]), "both say task worker:0"),
        (_cluster_configs(["a:1", "b:1"], [0]), "no TF_CONFIG for task(s) ['worker:1']"),
        (_cluster_configs(["a:1", "a:1"], [0, 1]), "address a:1 is used twice"),
        (_cluster_configs(["a:1", "b:1"], [0]) + _cluster_configs(["b:1", "a:1"], [1]), "different cluster"),
        (_cluster_configs(["a:1", "b:1"], [0, 2]), "index out of range"),
        ([], "no TF_CONFIG given"),
    ],
)
def test_check_tf_configs_names_the_mistake(texts, message):
    with pytest.raises(ValueError) as err:
        tfconfig.check_tf_configs(texts)
    assert message in str(err.value)
