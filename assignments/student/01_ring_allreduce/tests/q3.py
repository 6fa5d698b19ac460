from otter.test_files import test_case

OK_FORMAT = False

name = "q3"
points = 2

@test_case(points=None, hidden=False)
def test_ring_bytes(ring_bytes_per_node):
    assert ring_bytes_per_node(100, 4) is not None, 'returns None: replace ... with your code'
    assert abs(ring_bytes_per_node(100, 4) - 150) < 1e-09, '4 nodes, 100 bytes: 6 chunks of 25'

