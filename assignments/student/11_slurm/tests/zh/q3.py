from otter.test_files import test_case

OK_FORMAT = False

name = "q3"
points = 3

@test_case(points=None, hidden=False)
def test_slurm_tf_config(slurm_tf_config):
    got = slurm_tf_config(['node8', 'node9'], 0, 20017)
    assert got is not None, '返回了 None：把 ... 换成你的代码'
    assert got['cluster'] == {'worker': ['node8:20017', 'node9:20017']}, f'两个工作节点，host:port，按 Slurm 给出的顺序；你的结果是 {got}'

