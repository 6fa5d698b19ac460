from otter.test_files import test_case

OK_FORMAT = False

name = "q1"
points = 1

@test_case(points=None, hidden=False)
def test_ring_steps(ring_steps):
    assert ring_steps(4) is not None, 'ring_steps 返回 None：把 ... 换成你的代码'
    assert ring_steps(2) == 2, '2 个节点：一步分散归约，一步全收集'
    assert ring_steps(4) == 6, '4 个节点：环的两半都要算上'

