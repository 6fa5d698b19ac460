from otter.test_files import test_case

OK_FORMAT = False

name = "q1"
points = 2

@test_case(points=None, hidden=False)
def test_ring_time(ring_time):
    assert ring_time(1000000.0, 2, 1000000.0, 0.0) is not None, '返回了 None：把 ... 换成你的代码'
    assert abs(ring_time(1000000.0, 2, 1000000.0, 0.0) - 1.0) < 1e-09, '2 个工作节点：2 步，每步一半字节'

