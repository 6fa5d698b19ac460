from otter.test_files import test_case

OK_FORMAT = False

name = "q3"
points = 2

@test_case(points=None, hidden=False)
def test_ring_bytes(ring_bytes_per_node):
    assert ring_bytes_per_node(100, 4) is not None, '返回了 None：把 ... 换成你的代码'
    assert abs(ring_bytes_per_node(100, 4) - 150) < 1e-09, '4 个节点，100 字节：6 个 25 字节的分块'

