from otter.test_files import test_case

OK_FORMAT = False

name = "q2"
points = 3

@test_case(points=None, hidden=False)
def test_config_problems(config_problems, tf_config):
    good = config_problems([tf_config(0), tf_config(1), tf_config(2)])
    assert good is not None, 'config_problems 返回 None：把 ... 换成你的代码'
    assert good == [], f'正确的集群没有问题，而不是 {good}'
    assert config_problems([tf_config(0), tf_config(1), tf_config(1)]), '工作节点 1 出现了两次'

