from otter.test_files import test_case

OK_FORMAT = False

name = "q1"
points = 2

@test_case(points=None, hidden=False)
def test_ring_time(ring_time):
    assert ring_time(1000000.0, 2, 1000000.0, 0.0) is not None, 'returns None: replace ... with your code'
    assert abs(ring_time(1000000.0, 2, 1000000.0, 0.0) - 1.0) < 1e-09, '2 workers: 2 steps of half the bytes'

