from otter.test_files import test_case

OK_FORMAT = False

name = "q1"
points = 1

@test_case(points=None, hidden=False)
def test_ring_steps(ring_steps):
    assert ring_steps(4) is not None, 'ring_steps returns None: replace ... with your code'
    assert ring_steps(2) == 2, '2 nodes: one scatter-reduce step and one all-gather step'
    assert ring_steps(4) == 6, '4 nodes: count both halves of the ring'

