from otter.test_files import test_case

OK_FORMAT = False

name = "q2"
points = 2

@test_case(points=None, hidden=False)
def test_per_replica_batch(per_replica_batch):
    assert per_replica_batch(256, 4) is not None, '返回了 None：把 ... 换成你的代码'
    assert per_replica_batch(256, 4) == 64, '256 分给 4 个副本'

