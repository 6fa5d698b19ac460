from otter.test_files import test_case

OK_FORMAT = False

name = "q1"
points = 3

@test_case(points=None, hidden=False)
def test_replica_loss(replica_loss, tf):
    halves = [tf.constant([1.0, 2.0, 3.0, 4.0]), tf.constant([5.0, 6.0, 7.0, 8.0])]
    first = replica_loss(halves[0], 8)
    assert first is not None, 'replica_loss 返回 None：把 ... 换成你的代码'
    total = sum([float(replica_loss(h, 8)) for h in halves])
    assert abs(total - 4.5) < 1e-06, f'各副本之和是 {total}，全局平均值是 4.5'

